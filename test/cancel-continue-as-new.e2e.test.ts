// A cancel that arrives while the workflow task that would continue as new is running is not lost
// (R9 "every job has a cancellation signal"). The run stores one page per execution; its store is
// a local activity of the workflow task that then continues as new, so the test holds that store
// (a lock on the business table it writes; fetchPage does not touch it) in a real
// `durable-fetch worker` process, requests the cancel meanwhile, then lets the store go on. The
// task's continue-as-new and the cancel meet: the run must end `cancelled`, in that execution,
// with no page fetched after the cancel and its stored records matching its stored pages.
// (Histories recorded when the store was a regular activity, where the page's completion and the
// cancel came in one workflow task, replay through test/histories/fetch-records-cancel-before-continue.json.)
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
import { type Spawned, spawnWorker, within } from './helpers/process.ts';
import { holdStorePage } from './helpers/store-hold.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const SOURCE = 'cancan-src';
const DATE = '2026-07-07';
/** Three stored pages of 100 (the partner serves 50 a request: page n starts at seq 100n+1). */
const RECORDS = 300;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: Spawned | undefined;
const taskQueue = `test-cancan-${randomUUID()}`;

before(async () => {
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => RECORDS }),
    testClient(),
  ]);
});
after(async () => {
  await worker?.stop('SIGKILL', 5_000);
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/** Event kinds of a history (`activityTaskCompleted`, …: the attributes each event carries), in order. */
const kindsOf = (events: object[]) =>
  events.map((e) => {
    const key = Object.keys(e).find(
      (k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k],
    );
    return key?.replace(/EventAttributes$/, '') ?? '?';
  });

describe('cancel and continue-as-new', () => {
  it('a cancel arriving while the workflow task that continues as new stores its page ends the run cancelled; no page is fetched after it', async () => {
    await createSource(db.prisma, SOURCE, partner.url, { pageSize: 100 });
    worker = spawnWorker({
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      PARTNER_PAGE_LIMIT: '50',
      LOG_LEVEL: 'warn',
    });
    await worker.waitFor(/worker polling task queue/, 60_000);

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
      const historyKinds = async () =>
        kindsOf(
          (await client.workflow.getHandle(started.workflowId, started.runId).fetchHistory()).events ?? [],
        );
      // Page 0 fetched; its store waits for the lock, inside the task that would continue as new.
      await hold.waiting(60_000);
      const requestsBeforeCancel = partner.ledger.count({ sourceId: SOURCE });
      await handle.cancel();
      await waitFor(
        async () => (await historyKinds()).includes('workflowExecutionCancelRequested'),
        'the cancel recorded',
        30_000,
      );
      await hold.release();

      const err = await within(
        handle.result().then(
          () => undefined,
          (e: unknown) => e,
        ),
        120_000,
        () => worker?.output() ?? '',
      );

      const history = await historyKinds();
      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: SOURCE } });
      assert.equal(run.status, 'cancelled');
      assert.ok(run.pagesStored <= 1, `at most the held page stored: ${run.pagesStored}`);
      assert.equal(run.recordsStored, run.pagesStored * 100, 'the records of the stored pages, once');
      assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId: SOURCE } }), run.recordsStored);
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
      assert.ok(!history.includes('workflowExecutionContinuedAsNew'), history.join(' '));
      assert.equal((await handle.describe()).runId, started.runId, 'no later execution');
      assert.equal(await db.prisma.deadLetter.count({ where: { fetchRunId: run.id } }), 0, 'no dead letter');
    } finally {
      await hold.release();
    }
  });
});
