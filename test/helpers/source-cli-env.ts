/**
 * The setup the source CLI tests share: a cloned database, the shared Temporal dev server, a task
 * queue of the file's own (so its schedules are its own), and the CLI's environment pointing there.
 * Schedules a test creates are deleted afterwards: the dev server is shared by the whole run.
 */
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import { type Client, ScheduleNotFoundError } from '@temporalio/client';
import { useTestDatabase, type TestDatabase } from './database.ts';
import { temporalAddress, testClient } from './temporal.ts';

export interface SourceCliEnv {
  db: TestDatabase;
  client: Client;
  taskQueue: string;
  env: Record<string, string>;
  /** Schedule ids to delete after the file's tests. */
  schedules: Set<string>;
}

/** Registers the file's before/after hooks; the returned object is filled in by `before`. */
export function useSourceCliEnv(prefix: string): SourceCliEnv {
  const it = { schedules: new Set<string>() } as SourceCliEnv;
  before(async () => {
    it.db = await useTestDatabase();
    it.client = await testClient();
    it.taskQueue = `${prefix}-${randomUUID()}`;
    it.env = {
      DATABASE_URL: it.db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: it.taskQueue,
      USER: 'cli-tester',
    };
  });
  after(async () => {
    for (const id of it.schedules) {
      await it.client.schedule
        .getHandle(id)
        .delete()
        .catch((err: unknown) => {
          if (!(err instanceof ScheduleNotFoundError)) throw err;
        });
    }
    await it.client?.connection.close();
    await it.db?.drop();
  });
  return it;
}
