/** What the `sources apply -f` tests share: files written to a temporary folder, an open run, the report. */
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PrismaClient } from '../../prisma/generated/client.ts';

/** `sources apply --json` as the tests read it. */
export type ApplyJson = {
  changes: { id: string; action: string; fields: string[] }[];
  schedules: { scheduleId: string; sourceId: string; change: string }[];
};

let dir: string | undefined;

/** Writes `text` to file `name` of a temporary folder (one per process); returns its path. */
export async function tempFile(name: string, text: string): Promise<string> {
  dir ??= await mkdtemp(path.join(tmpdir(), 'sources-file-'));
  const at = path.join(dir, name);
  await writeFile(at, text);
  return at;
}

/** A running run of `sourceId` (its workflow need not exist: the database is the system of record). */
export async function seedOpenRun(db: PrismaClient, sourceId: string, date = '2026-01-01'): Promise<void> {
  await db.fetchRun.create({
    data: {
      jobType: 'fetch-records',
      sourceId,
      businessDate: new Date(`${date}T00:00:00Z`),
      payload: { sourceId, businessDate: date, requestedBy: 'test' },
      idempotencyKey: `fetch-records:${sourceId}:${date}`,
      status: 'running',
      attempt: 1,
      scheduledAt: new Date(),
      correlationId: randomUUID(),
      workflowId: `fetch/fetch-records/${sourceId}/${date}`,
    },
  });
}
