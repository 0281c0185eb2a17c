// End to end on real services: the shared Temporal dev server, a cloned PostgreSQL database and the
// demo partner API over real sockets. Assertions are on rows, outbox events and the partner's ledger.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { SEARCH_KEYS, startFetch, type DurableFetchContext } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { fetchRecordsWorkflow } from '../workflows/fetch-records.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const DATE = '2026-03-14';
const RECORDS = 230; // pages of 100 → 100 + 100 + 30
const SECRET = 'tok-e2e-5b1f0c';

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let ctx: DurableFetchContext;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => RECORDS });
  client = await testClient();
  worker = await testWorker(
    testDeps(db.prisma, { secret: (ref) => (ref === 'DF_SECRET_E2E' ? SECRET : undefined) }),
  );
  ctx = {
    temporal: client,
    prisma: db.prisma,
    taskQueue: worker.taskQueue,
    now: () => new Date('2026-11-29T12:00:00Z'),
  };
});

after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/** Every payload of a workflow's history (inputs, results, heartbeat details), decoded to text. */
async function historyText(workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  // Serialised, payload bytes become base64 strings under `data`, next to their `metadata`.
  const texts: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== 'object' || node === null) return;
    const obj = node as Record<string, unknown>;
    if (typeof obj.data === 'string' && 'metadata' in obj)
      texts.push(Buffer.from(obj.data, 'base64').toString('utf8'));
    Object.values(obj).forEach(walk);
  };
  walk(JSON.parse(JSON.stringify(history)));
  return texts.join('\n');
}

async function counts(sourceId: string) {
  const [runs, records, pageEvents, completedEvents] = await Promise.all([
    db.prisma.fetchRun.count({ where: { sourceId } }),
    db.prisma.fetchedRecord.count({ where: { sourceId } }),
    db.prisma.outboxEvent.count({
      where: { topic: 'fetch.page_stored', payload: { path: ['sourceId'], equals: sourceId } },
    }),
    db.prisma.outboxEvent.count({
      where: { topic: 'fetch.run_completed', payload: { path: ['sourceId'], equals: sourceId } },
    }),
  ]);
  return { runs, records, pageEvents, completedEvents };
}

describe('fetch-records end to end', () => {
  it('a run stores every record and exactly one outbox event per page', async () => {
    await createSource(db.prisma, 'e2e-alpha', partner.url);
    const result = await worker.run(async () => {
      const started = await startFetch(ctx, { sourceId: 'e2e-alpha', date: DATE, requestedBy: 'test' });
      assert.equal(started.workflowId, `fetch/fetch-records/e2e-alpha/${DATE}`);
      assert.equal(started.joined, false);
      return started.handle.result();
    });
    assert.deepEqual(result, {
      status: 'succeeded',
      fetchRunId: result.fetchRunId,
      pages: 3,
      records: RECORDS,
    });
    assert.deepEqual(await counts('e2e-alpha'), {
      runs: 1,
      records: RECORDS,
      pageEvents: 3,
      completedEvents: 1,
    });

    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'e2e-alpha' } });
    assert.equal(run.status, 'succeeded');
    assert.equal(run.pagesStored, 3);
    assert.equal(run.recordsStored, RECORDS);
    assert.equal(run.idempotencyKey, `fetch-records:e2e-alpha:${DATE}`);
    const events = await db.prisma.outboxEvent.findMany({
      where: { aggregateId: run.id, topic: 'fetch.page_stored' },
    });
    const perPage = events
      .map((e) => (e.payload as { recordCount: number }).recordCount)
      .sort((a, b) => b - a);
    assert.deepEqual(perPage, [100, 100, 30]);
    // Records wait in fetched_page between fetch and store, never in Temporal's history (R2).
    assert.equal(await db.prisma.fetchedPage.count(), 0);
    const history = await historyText(`fetch/fetch-records/e2e-alpha/${DATE}`);
    assert.match(history, /e2e-alpha/, 'payloads were decoded');
    assert.doesNotMatch(history, new RegExp(`e2e-alpha-${DATE}-\\d{5}`), 'no record id in the history');
    // 50 records per partner request: 2 + 2 + 1 requests, each carrying the page's idempotency key.
    const served = partner.ledger.entries({ sourceId: 'e2e-alpha' });
    assert.equal(served.length, 5);
    assert.deepEqual(
      [...new Set(served.map((e) => e.idempotencyKey))],
      [0, 1, 2].map((n) => `fetch-records:e2e-alpha:${DATE}:page:${n}`),
    );
  });

  it('starting the same business key twice gives one FetchRun and no duplicate rows or events', async () => {
    await createSource(db.prisma, 'e2e-beta', partner.url);
    await worker.run(async () => {
      const [a, b] = await Promise.all([
        startFetch(ctx, { sourceId: 'e2e-beta', date: DATE, requestedBy: 'test' }),
        startFetch(ctx, { sourceId: 'e2e-beta', date: DATE, requestedBy: 'test' }),
      ]);
      assert.deepEqual([a.joined, b.joined].sort(), [false, true]);
      assert.equal(a.runId, b.runId);
      await a.handle.result();
      // Once succeeded, a third start joins the finished run instead of running again.
      const c = await startFetch(ctx, { sourceId: 'e2e-beta', date: DATE, requestedBy: 'test' });
      assert.equal(c.joined, true);
      assert.equal((await c.handle.result()).status, 'succeeded');
    });
    assert.deepEqual(await counts('e2e-beta'), {
      runs: 1,
      records: RECORDS,
      pageEvents: 3,
      completedEvents: 1,
    });
    assert.equal(partner.ledger.count({ sourceId: 'e2e-beta' }), 5);
  });

  it('a second workflow for a business key another workflow owns ends as a visible duplicate with no side effects', async () => {
    await createSource(db.prisma, 'e2e-gamma', partner.url);
    await worker.run(async () => {
      const first = await startFetch(ctx, { sourceId: 'e2e-gamma', date: DATE, requestedBy: 'test' });
      await first.handle.result();
      // E.g. a Schedule's action, whose workflow ids carry a timestamp suffix.
      const other = await client.workflow.execute(fetchRecordsWorkflow, {
        workflowId: `fetch/fetch-records/e2e-gamma/${DATE}-2026-11-29T02:00:00Z`,
        taskQueue: worker.taskQueue,
        args: [{ sourceId: 'e2e-gamma', businessDate: DATE, correlationId: 'c-2', requestedBy: 'schedule' }],
      });
      assert.equal(other.status, 'duplicate');
      // Visible as such to operators: the FetchStatus search attribute says so.
      const described = await client.workflow
        .getHandle(`fetch/fetch-records/e2e-gamma/${DATE}-2026-11-29T02:00:00Z`)
        .describe();
      assert.equal(described.typedSearchAttributes.get(SEARCH_KEYS.status), 'duplicate');
      assert.equal(other.status === 'duplicate' && other.ownerWorkflowId, first.workflowId);
    });
    assert.deepEqual(await counts('e2e-gamma'), {
      runs: 1,
      records: RECORDS,
      pageEvents: 3,
      completedEvents: 1,
    });
    assert.equal(partner.ledger.count({ sourceId: 'e2e-gamma' }), 5);
  });

  it('a retried fetchPage resumes from its staged cursor instead of asking the partner again', async () => {
    await createSource(db.prisma, 'e2e-delta', partner.url);
    // The second partner request of the run (page 0, records 50..99) loses its connection.
    partner.faults.add({ sourceId: 'e2e-delta', afterRequests: 1, kind: 'reset' });
    await worker.run(async () => {
      const started = await startFetch(ctx, { sourceId: 'e2e-delta', date: DATE, requestedBy: 'test' });
      assert.equal((await started.handle.result()).status, 'succeeded');
    });
    const served = partner.ledger.entries({ sourceId: 'e2e-delta' });
    assert.equal(served.filter((e) => e.fault === 'reset').length, 1);
    // The first request (cursor null) was not repeated by the retry: 5 normal requests + 1 faulted.
    assert.equal(served.filter((e) => e.cursor === null).length, 1);
    assert.equal(served.length, 6);
    assert.deepEqual(await counts('e2e-delta'), {
      runs: 1,
      records: RECORDS,
      pageEvents: 3,
      completedEvents: 1,
    });
  });

  it('a source credential is resolved by reference at run time and appears in no history or row', async () => {
    await createSource(db.prisma, 'e2e-zeta', partner.url, { credentialsRef: 'DF_SECRET_E2E' });
    await worker.run(async () => {
      const started = await startFetch(ctx, { sourceId: 'e2e-zeta', date: DATE, requestedBy: 'test' });
      assert.equal((await started.handle.result()).status, 'succeeded');
    });
    const served = partner.ledger.entries({ sourceId: 'e2e-zeta' });
    assert.equal(served.length, 5);
    assert.ok(
      served.every((e) => e.auth),
      'every partner call carried the bearer token',
    );
    assert.doesNotMatch(await historyText(`fetch/fetch-records/e2e-zeta/${DATE}`), new RegExp(SECRET));
    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'e2e-zeta' } });
    assert.doesNotMatch(JSON.stringify(run), new RegExp(SECRET));
  });

  it('a long run continues as new after a bounded number of pages and still stores each page once', async () => {
    await createSource(db.prisma, 'e2e-epsilon', partner.url, { pageSize: 50 });
    const workflowId = `fetch/fetch-records/e2e-epsilon/${DATE}`;
    const result = await worker.run(() =>
      client.workflow.execute(fetchRecordsWorkflow, {
        workflowId,
        taskQueue: worker.taskQueue,
        args: [
          {
            sourceId: 'e2e-epsilon',
            businessDate: DATE,
            correlationId: 'c-3',
            requestedBy: 'test',
            pagesPerExecution: 2,
          },
        ],
      }),
    );
    assert.deepEqual(result, {
      status: 'succeeded',
      fetchRunId: result.fetchRunId,
      pages: 5,
      records: RECORDS,
    });
    const executions = [];
    for await (const e of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) executions.push(e);
    assert.equal(executions.length, 3, 'pages 0-1, 2-3 and 4 in three executions');
    assert.deepEqual(await counts('e2e-epsilon'), {
      runs: 1,
      records: RECORDS,
      pageEvents: 5,
      completedEvents: 1,
    });
  });
});
