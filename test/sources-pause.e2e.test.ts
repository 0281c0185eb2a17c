// Pausing a source end to end (R11 "pause consumption") on real services: the shared
// Temporal dev server, a real worker, a cloned database and the demo partner over real sockets.
// A paused source holds its running run at a page boundary (after a stored page, before the next
// fetch), durably, until it is resumed (the run then completes, every record once) or cancelled
// (the run ends `cancelled`). A run started before the pause waits before its first page.
// Assertions are on rows, outbox events, the partner's ledger and the workflow's FetchStatus.
// Source ids start with `spause-`: the Temporal namespace is shared with other test files.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Client, type WorkflowHandle, WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { createHttpClient } from '../activities/http.ts';
import { PAGE_STORED_TOPIC, RUN_COMPLETED_TOPIC } from '../activities/outbox.ts';
import { enqueueFetch, getEnqueuedFetch, START_WORKFLOW_TOPIC } from '../client/enqueue-fetch.ts';
import { pauseSource, resumeSource } from '../client/sources/index.ts';
import { type DurableFetchContext, SEARCH_KEYS, startFetch } from '../client/start-fetch.ts';
import { encodeCursor, makeRecord } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { isUserFacingError } from '../runtime/errors.ts';
import type { Publisher } from '../worker/outbox/publisher.ts';
import { createStartWorkflowSink } from '../worker/outbox/start-workflow-sink.ts';
import type { fetchRecordsWorkflow } from '../workflows/fetch-records.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { testPublisher } from './helpers/outbox.ts';
import { testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const DATE = '2026-05-04';
const NOW = () => new Date('2026-11-29T12:00:00Z');
const RECORDS = 300; // stored pages of 100 (the source's page size) → 3 pages
const PAGES = 3;
/** The partner serves 50 records a request: stored page n is asked for at seq 100n+1 and 100n+51. */
const cursorsOfPage = (n: number) => [n === 0 ? null : encodeCursor(100 * n + 1), encodeCursor(100 * n + 51)];
/** How long a test watches a paused run for any progress it should not make. */
const HOLD_MS = 3_000;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let ctx: DurableFetchContext;
let publisher: Publisher;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => RECORDS });
  client = await testClient();
  // A response timeout far beyond any delay used here.
  const http = createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 120_000 });
  worker = await testWorker(testDeps(db.prisma, { http }));
  ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue, now: NOW };
  publisher = testPublisher(
    db.prisma,
    { temporal: createStartWorkflowSink(client) },
    { routes: [{ pattern: START_WORKFLOW_TOPIC, sink: 'temporal' }] },
  );
});

after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/** Polls `condition` every 100 ms until it holds; fails naming `what` after `timeoutMs`. */
async function eventually(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

async function fetchStatus(handle: WorkflowHandle): Promise<string | undefined> {
  return (await handle.describe()).typedSearchAttributes.get(SEARCH_KEYS.status);
}

const runOf = (sourceId: string) => db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });

/** Partner requests of `sourceId` for the pages from `pageNo` on. */
function requestsFromPage(sourceId: string, pageNo: number): number {
  let n = 0;
  for (let p = pageNo; p < PAGES; p++) {
    for (const cursor of cursorsOfPage(p)) n += partner.ledger.count({ sourceId, cursor });
  }
  return n;
}

/** Makes the partner hold the first request of stored page 1 for `delayMs`; resolves once it holds it. */
function holdPageOne(sourceId: string, delayMs: number): () => boolean {
  partner.faults.add({ sourceId, cursor: encodeCursor(101), kind: 'delay', delayMs });
  // The fault is used up (and dropped from the list) once the partner has taken the request.
  return () => !partner.faults.list().some((f) => f.sourceId === sourceId && f.remaining > 0);
}

/**
 * The run of `sourceId` is held at a page boundary: FetchStatus `paused`, and for a while neither
 * its stored pages, its records nor the partner's ledger move. Returns the pages stored.
 */
async function assertHeld(sourceId: string, handle: WorkflowHandle): Promise<number> {
  await eventually(async () => (await fetchStatus(handle)) === 'paused', 'FetchStatus paused');
  const run = await runOf(sourceId);
  const requests = partner.ledger.count({ sourceId });
  await sleep(HOLD_MS);
  const later = await runOf(sourceId);
  assert.equal(later.status, 'running');
  assert.equal(later.pagesStored, run.pagesStored, 'no page stored while paused');
  assert.equal(later.recordsStored, run.recordsStored);
  assert.equal(
    await db.prisma.fetchedRecord.count({ where: { sourceId } }),
    run.pagesStored * 100,
    'the stored pages, all of them',
  );
  assert.equal(partner.ledger.count({ sourceId }), requests, 'no partner request while paused');
  assert.equal(requestsFromPage(sourceId, run.pagesStored), 0, 'nothing of the later pages was asked for');
  assert.equal(await db.prisma.fetchedPage.count(), 0, 'nothing half-fetched');
  assert.equal(await fetchStatus(handle), 'paused');
  assert.equal((await handle.describe()).status.name, 'RUNNING');
  return run.pagesStored;
}

/** The run completed with every record exactly once and one outbox event per page. */
async function assertComplete(sourceId: string): Promise<void> {
  const run = await runOf(sourceId);
  assert.deepEqual([run.status, run.pagesStored, run.recordsStored], ['succeeded', PAGES, RECORDS]);
  const records = await db.prisma.fetchedRecord.findMany({
    where: { sourceId },
    select: { externalId: true },
  });
  assert.equal(records.length, RECORDS);
  assert.deepEqual(
    records.map((r) => r.externalId).sort(),
    Array.from({ length: RECORDS }, (_, i) => makeRecord(sourceId, DATE, i + 1).id).sort(),
    'every record of the partner, each once',
  );
  const pageEvents = await db.prisma.outboxEvent.findMany({
    where: { aggregateId: run.id, topic: PAGE_STORED_TOPIC },
  });
  assert.deepEqual(
    pageEvents.map((e) => (e.payload as { pageNo: number }).pageNo).sort(),
    [0, 1, 2],
    'one page_stored event per page, no duplicate',
  );
  assert.equal(
    await db.prisma.outboxEvent.count({ where: { aggregateId: run.id, topic: RUN_COMPLETED_TOPIC } }),
    1,
  );
  // Each partner page was asked for once (no page fetched again after the wait).
  for (let p = 0; p < PAGES; p++) {
    for (const cursor of cursorsOfPage(p)) {
      assert.equal(partner.ledger.count({ sourceId, cursor, status: 200 }), 1, `page ${p} cursor ${cursor}`);
    }
  }
}

describe('pausing a source', { timeout: 300_000 }, () => {
  it('holds a running run at a page boundary; resume lets it complete with every record once', async () => {
    const sourceId = 'spause-mid';
    await createSource(db.prisma, sourceId, partner.url);
    const held = holdPageOne(sourceId, 3_000);
    await worker.run(async () => {
      const started = await startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
      await eventually(held, 'the partner holds the first request of page 1');
      // Page 0 is stored, page 1 is being fetched: the pause takes effect once page 1 is stored.
      const paused = await pauseSource(ctx, sourceId, { reason: 'partner maintenance', actor: 'test' });
      assert.deepEqual([paused.schedulePaused, paused.runningRuns], [false, 1]);

      const pages = await assertHeld(sourceId, started.handle);
      assert.ok(pages > 0 && pages < PAGES, `held between pages (${pages} stored)`);
      // The run was not stopped mid-page: the page in flight when the pause came was stored.
      assert.equal(pages, 2);

      const resumed = await resumeSource(ctx, sourceId, { actor: 'test', reason: 'partner back' });
      assert.deepEqual([resumed.runningRuns, resumed.signalled], [1, 1]);
      const result = await started.handle.result();
      assert.deepEqual(result, {
        status: 'succeeded',
        fetchRunId: result.fetchRunId,
        pages: PAGES,
        records: RECORDS,
      });
      assert.equal(await fetchStatus(started.handle), 'succeeded');
    });
    await assertComplete(sourceId);
    const audit = await db.prisma.auditEntry.findMany({
      where: { targetType: 'source', targetId: sourceId },
      orderBy: { id: 'asc' },
    });
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor, a.reason]),
      [
        ['source.pause', 'test', 'partner maintenance'],
        ['source.resume', 'test', 'partner back'],
      ],
    );
  });

  it('the downstream submission is a safe point too: a paused source gets no submission until resumed', async () => {
    const sourceId = 'spause-submit';
    await createSource(db.prisma, sourceId, partner.url);
    await db.prisma.source.update({ where: { id: sourceId }, data: { submitSummary: true } });
    const reference = `fetch-records:${sourceId}:${DATE}:submit-summary:r1`;
    // Hold the last page's first request, pause meanwhile: the run stores it, then must wait.
    partner.faults.add({ sourceId, cursor: encodeCursor(201), kind: 'delay', delayMs: 3_000 });
    const heldLast = () => !partner.faults.list().some((f) => f.sourceId === sourceId && f.remaining > 0);
    await worker.run(async () => {
      const started = await startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
      await eventually(heldLast, 'the partner holds the first request of the last page');
      await pauseSource(ctx, sourceId, { reason: 'downstream freeze', actor: 'test' });
      assert.equal(await assertHeld(sourceId, started.handle), PAGES, 'every page stored, then held');
      assert.equal(partner.ledger.count({ action: 'submit', reference }), 0, 'no submission while paused');
      await resumeSource(ctx, sourceId, { actor: 'test' });
      assert.equal((await started.handle.result()).status, 'succeeded');
    });
    assert.deepEqual(
      partner.submissions.byReference(reference).map((sub) => sub.status),
      ['confirmed'],
      'one submission, after the resume',
    );
    await assertComplete(sourceId);
  });

  it('cancelling a run while it waits ends it cancelled, with no further partner request', async () => {
    const sourceId = 'spause-cancel';
    await createSource(db.prisma, sourceId, partner.url);
    const held = holdPageOne(sourceId, 3_000);
    await worker.run(async () => {
      const started = await startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
      await eventually(held, 'the partner holds the first request of page 1');
      await pauseSource(ctx, sourceId, { reason: 'suspicious data', actor: 'test' });
      const pages = await assertHeld(sourceId, started.handle);
      assert.ok(pages > 0 && pages < PAGES, `held between pages (${pages} stored)`);
      const requests = partner.ledger.count({ sourceId });

      await started.handle.cancel();
      const err = await started.handle.result().catch((e: unknown) => e);
      assert.ok(err instanceof WorkflowFailedError, String(err));
      assert.ok(err.cause instanceof CancelledFailure, String(err.cause));
      assert.equal((await started.handle.describe()).status.name, 'CANCELLED');
      assert.equal(await fetchStatus(started.handle), 'cancelled');

      const run = await runOf(sourceId);
      assert.deepEqual([run.status, run.pagesStored, run.leaseUntil], ['cancelled', pages, null]);
      assert.ok(run.finishedAt, 'finished_at is set');
      assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), pages * 100);
      assert.equal(
        await db.prisma.outboxEvent.count({ where: { aggregateId: run.id, topic: RUN_COMPLETED_TOPIC } }),
        0,
      );

      // Resuming afterwards finds nothing running, and nothing asks the partner again.
      const resumed = await resumeSource(ctx, sourceId, { actor: 'test' });
      assert.deepEqual([resumed.runningRuns, resumed.signalled], [0, 0]);
      await sleep(HOLD_MS);
      assert.equal(partner.ledger.count({ sourceId }), requests, 'no partner request after the cancel');
      assert.equal((await runOf(sourceId)).status, 'cancelled');
    });
  });

  it('a start queued before the pause waits before its first page until resumed; new starts are refused', async () => {
    const sourceId = 'spause-queued';
    await createSource(db.prisma, sourceId, partner.url);
    // Enqueued (committed) while the source was not paused…
    const enqueued = await db.prisma.$transaction((tx) =>
      enqueueFetch(
        tx,
        { sourceId, date: DATE, requestedBy: 'test' },
        { taskQueue: worker.taskQueue, now: NOW },
      ),
    );
    // …then paused before the publisher relayed it.
    await pauseSource(ctx, sourceId, { reason: 'hold everything', actor: 'test' });

    // While paused, no new start is accepted, through either door.
    const refusedStart = await startFetch(ctx, { sourceId, date: '2026-05-05', requestedBy: 'test' }).catch(
      (e: unknown) => e,
    );
    assert.ok(isUserFacingError(refusedStart), 'startFetch of a paused source is refused');
    assert.equal(refusedStart.code, 'SOURCE_PAUSED');
    assert.match(
      refusedStart.message,
      /^source 'spause-queued' is paused since \S+ \(hold everything\): resume it first/,
    );
    const outboxBefore = await db.prisma.outboxEvent.count();
    const refusedEnqueue = await db.prisma
      .$transaction((tx) =>
        enqueueFetch(
          tx,
          { sourceId, date: '2026-05-05', requestedBy: 'test' },
          { taskQueue: worker.taskQueue, now: NOW },
        ),
      )
      .catch((e: unknown) => e);
    assert.ok(isUserFacingError(refusedEnqueue), 'enqueueFetch of a paused source is refused');
    assert.equal(refusedEnqueue.code, 'SOURCE_PAUSED');
    assert.equal(await db.prisma.outboxEvent.count(), outboxBefore, 'the refused enqueue wrote nothing');

    await worker.run(async () => {
      // The queued command is relayed: the workflow starts, claims the run and waits.
      assert.ok((await publisher.runOnce()) >= 1, 'the publisher relayed the command');
      assert.equal((await getEnqueuedFetch(db.prisma, enqueued.commandId))?.status, 'published');
      const handle = client.workflow.getHandle<typeof fetchRecordsWorkflow>(enqueued.workflowId);
      const pages = await assertHeld(sourceId, handle);
      assert.equal(pages, 0, 'waiting before its first page');
      assert.equal(partner.ledger.count({ sourceId }), 0, 'no partner request at all');

      const resumed = await resumeSource(ctx, sourceId, { actor: 'test' });
      assert.deepEqual([resumed.runningRuns, resumed.signalled], [1, 1]);
      const result = await handle.result();
      assert.deepEqual(result, {
        status: 'succeeded',
        fetchRunId: result.fetchRunId,
        pages: PAGES,
        records: RECORDS,
      });
    });
    await assertComplete(sourceId);
    assert.equal(await db.prisma.fetchRun.count({ where: { sourceId } }), 1, 'the refused date never ran');
  });
});
