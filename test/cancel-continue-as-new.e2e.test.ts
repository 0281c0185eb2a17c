// A cancel that arrives in the same workflow task as a continue-as-new is not lost (R9 "every job
// has a cancellation signal"). Workflows and activities run in two real worker processes
// (test/helpers/half-worker.ts, the project's worker pieces) on a fresh task queue, so the
// workflow half can be stopped while the activity half completes the run's storePage; the cancel
// is requested meanwhile, and when the workflow half comes back its next workflow task holds both:
// the stored page, after which the run (one page per execution) would continue as new, and the
// cancel. The run must end `cancelled`, in that execution, with no page fetched after the cancel.
// The test holds storePage by locking the business table it writes (fetchPage does not touch it).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type Client, WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { launchFetch, prepareFetch } from '../client/start-fetch.ts';
import { encodeCursor } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { type Spawned, spawnTs, within } from './helpers/process.ts';
import { holdStorePage } from './helpers/store-hold.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const SOURCE = 'cancan-src';
const DATE = '2026-07-07';
/** Three stored pages of 100 (the partner serves 50 a request: page n starts at seq 100n+1). */
const RECORDS = 300;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
const taskQueue = `test-cancan-${randomUUID()}`;
const spawned: Spawned[] = [];

function half(role: 'workflows' | 'activities'): Spawned {
  const p = spawnTs(['test/helpers/half-worker.ts', role], {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: taskQueue,
    PARTNER_PAGE_LIMIT: '50',
    LOG_LEVEL: 'warn',
  });
  spawned.push(p);
  return p;
}

before(async () => {
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => RECORDS }),
    testClient(),
  ]);
});
after(async () => {
  for (const p of spawned) await p.stop('SIGKILL', 5_000);
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/** Rejects as `promise` does, with what `describe` says appended (worker output, rows). */
const seen =
  (describe: () => Promise<string>) =>
  async <T>(promise: Promise<T>): Promise<T> => {
    try {
      return await promise;
    } catch (err) {
      throw new Error(`${String(err)}\n${await describe()}`, { cause: err });
    }
  };

/** Event kinds of a history (`activityTaskCompleted`, …: the attributes each event carries), in order. */
const kindsOf = (events: object[]) =>
  events.map((e) => {
    const key = Object.keys(e).find(
      (k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k],
    );
    return key?.replace(/EventAttributes$/, '') ?? '?';
  });

describe('cancel and continue-as-new', () => {
  it('a cancel in the same workflow task as a continue-as-new ends the run cancelled; no page is fetched after it', async () => {
    await createSource(db.prisma, SOURCE, partner.url, { pageSize: 100 });
    const activities = half('activities');
    let workflows = half('workflows');
    await Promise.all([
      activities.waitFor(/half worker polling/, 60_000),
      workflows.waitFor(/half worker polling/, 60_000),
    ]);

    // storePage writes the job's business rows: hold every writer of that table.
    const hold = await holdStorePage(db.prisma);
    try {
      const ctx = { temporal: client, prisma: db.prisma, taskQueue };
      const prepared = await prepareFetch(ctx, { sourceId: SOURCE, date: DATE, requestedBy: 'test' });
      const started = await launchFetch(ctx, {
        ...prepared,
        input: { ...prepared.input, pagesPerExecution: 1 },
      });
      const handle = started.handle;
      // storePage of page 0 is waiting for the lock.
      await seen(async () => {
        const run = await db.prisma.fetchRun.findFirst({ where: { sourceId: SOURCE } });
        const pending = (await handle.describe()).raw.pendingActivities ?? [];
        const activity = pending.map((a) => `${a.activityType?.name} #${a.attempt}`);
        return `run ${run?.status} ${run?.pagesStored}; pending ${activity.join(', ')}\n${workflows.output()}\n${activities.output()}`;
      })(hold.waiting(60_000));
      assert.equal(await workflows.stop('SIGTERM', 15_000), 0, 'the workflow half stopped gracefully');
      await hold.release();

      // The page is stored and Temporal has its completion, with no workflow worker to see it.
      await waitFor(
        async () => {
          const pending = (await handle.describe()).raw.pendingActivities ?? [];
          const run = await db.prisma.fetchRun.findFirst({ where: { sourceId: SOURCE } });
          return run?.pagesStored === 1 && pending.length === 0;
        },
        'page 0 stored and its activity completed',
        60_000,
      );
      const requestsBeforeCancel = partner.ledger.count({ sourceId: SOURCE });
      await handle.cancel();
      workflows = half('workflows');

      const err = await within(
        handle.result().then(
          () => undefined,
          (e: unknown) => e,
        ),
        120_000,
        () => `${workflows.output()}\n${activities.output()}`,
      );

      // The interleaving happened: one workflow task saw the completion and the cancel together.
      const history = kindsOf(
        (await client.workflow.getHandle(started.workflowId, started.runId).fetchHistory()).events ?? [],
      );
      const cancelAt = history.indexOf('workflowExecutionCancelRequested');
      const storedAt = history.lastIndexOf('activityTaskCompleted', cancelAt);
      const taskAt = history.indexOf('workflowTaskStarted', cancelAt);
      assert.ok(storedAt >= 0 && cancelAt > storedAt && taskAt > cancelAt, history.join(' '));
      assert.ok(
        !history.slice(storedAt, taskAt).includes('workflowTaskStarted'),
        `no workflow task between the stored page and the cancel: ${history.join(' ')}`,
      );

      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: SOURCE } });
      assert.deepEqual([run.status, run.pagesStored, run.recordsStored], ['cancelled', 1, 100]);
      assert.ok(err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure, String(err));
      assert.equal(
        partner.ledger.count({ sourceId: SOURCE }),
        requestsBeforeCancel,
        'no partner call after the cancel',
      );
      assert.equal(
        partner.ledger.count({ sourceId: SOURCE, cursor: encodeCursor(101) }),
        0,
        'page 1 never asked for',
      );
      assert.equal(history.at(-1), 'workflowExecutionCanceled', 'that execution ended, not continued as new');
      assert.equal((await handle.describe()).runId, started.runId, 'no later execution');
      assert.equal(await db.prisma.deadLetter.count({ where: { fetchRunId: run.id } }), 0, 'no dead letter');
    } finally {
      await hold.release();
    }
  });
});
