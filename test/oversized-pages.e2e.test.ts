// A partner that sends more records than the engine asked for is stored as it came: every record
// once, in stored pages of at most the page size, and the partner asked once per partner page
// (never again for the same page to take the rest). Real Temporal, PostgreSQL and HTTP (the demo
// partner, asked for a page size of its own by a test job, and by the declarative `http` job), and
// real worker processes SIGKILLed once the first partner response is staged over several pages.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { defineJob, MAX_RECORDS_PER_RESPONSE } from '../activities/job-api/index.ts';
import { createJobRegistry } from '../activities/job-api/registry.ts';
import type { WorkerCrashPoint } from '../runtime/crash-points.ts';
import { launchFetch, prepareFetch, startFetch } from '../client/start-fetch.ts';
import { PAGE_STORED_TOPIC, storeFetchedRecords } from '../jobs/fetched-records.ts';
import { makeRecord } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';
import { jobsWithOversize, OVERSIZE_JOB_TYPE } from './helpers/oversized-pages.ts';
import { spawnTs, within } from './helpers/process.ts';
import { temporalAddress, testClient, testWorker } from './helpers/temporal.ts';

/** The engine asks the partner for at most this many records per request. */
const PARTNER_PAGE_LIMIT = 50;

/** What a source's partner holds, and how it pages. */
interface Case {
  sourceId: string;
  date: string;
  records: number;
  pageSize: number;
  /** The partner's own page size (what every response holds, but the last). */
  partnerPage: number;
}

/** Records per source at the partner (its own list is the judge). */
const counts = new Map<string, number>();

/** A job that sends one response of `n` records, `n` from its source id (`ov-huge-<n>`). */
const hugeJob = defineJob<Record<string, never>, { id: string }>({
  type: 'oversize-huge',
  description: 'one response of as many records as its source id says (tests)',
  recordId: (r) => r.id,
  fetchPage: (ctx) => {
    const n = Number(ctx.source.id.split('-').pop());
    return Promise.resolve({
      records: Array.from({ length: n }, (_, i) => ({ id: `h${i}` })),
      nextCursor: null,
    });
  },
  storePage: (_tx, records, ctx) =>
    storeFetchedRecords(
      ctx.sql,
      records.map((r) => ({ external_id: r.id, data: r.record })),
      ctx,
    ),
});

let partner: PartnerServer;
let kit: JobKit;

before(async () => {
  partner = await startPartner({ port: 0, recordCount: (id) => counts.get(id) ?? 0, maxPageSize: 500 });
  kit = await jobTestKit({
    jobs: [...jobsWithOversize, hugeJob],
    deps: { partnerPageLimit: PARTNER_PAGE_LIMIT },
  });
});
after(async () => {
  await kit?.close();
  await partner?.close();
});

const partnerIds = (c: Case) =>
  Array.from({ length: c.records }, (_, i) => makeRecord(c.sourceId, c.date, i + 1).id).sort();

/**
 * PostgreSQL and the partner after the run of `c`: every record stored once and listed in one page
 * event, every stored page at most the page size and all but the last full, nothing left staged,
 * and the partner asked once per partner page.
 */
async function assertStoredOnce(db: Pick<TestDatabase, 'prisma'>, c: Case, fetchRunId: string) {
  const expectedIds = partnerIds(c);
  const stored = await db.prisma.fetchedRecord.findMany({
    where: { sourceId: c.sourceId },
    select: { externalId: true },
  });
  assert.deepEqual(stored.map((r) => r.externalId).sort(), expectedIds);

  const events = await db.prisma.outboxEvent.findMany({
    where: { aggregateId: fetchRunId, topic: PAGE_STORED_TOPIC },
  });
  const pages = events
    .map((e) => e.payload as { pageNo: number; externalIds: string[] })
    .sort((a, b) => a.pageNo - b.pageNo);
  const pageCount = Math.ceil(c.records / c.pageSize);
  assert.deepEqual(
    pages.map((p) => p.pageNo),
    Array.from({ length: pageCount }, (_, n) => n),
  );
  for (const [n, page] of pages.entries()) {
    const size = n < pageCount - 1 ? c.pageSize : c.records - c.pageSize * (pageCount - 1);
    assert.equal(page.externalIds.length, size, `stored page ${n} holds ${size} records`);
  }
  assert.deepEqual(pages.flatMap((p) => p.externalIds).sort(), expectedIds);

  const run = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: fetchRunId } });
  assert.deepEqual([run.status, run.pagesStored, run.recordsStored], ['succeeded', pageCount, c.records]);
  assert.equal(
    await db.prisma.fetchedPage.count({ where: { key: { contains: `:${c.sourceId}:` } } }),
    0,
    'nothing left staged',
  );

  // Once per partner page: each request at another cursor, as many as the partner's pages.
  const requests = partner.ledger.entries({ sourceId: c.sourceId, date: c.date });
  assert.equal(requests.length, Math.ceil(c.records / c.partnerPage), 'one request per partner page');
  assert.equal(new Set(requests.map((r) => r.cursor ?? null)).size, requests.length, 'no cursor asked twice');
}

void describe('oversized pages: a partner that sends more than asked', () => {
  const cases: (Case & { why: string })[] = [
    {
      why: '3× what was asked, its overflow part of the next stored page',
      sourceId: 'ov-triple',
      date: '2026-10-01',
      records: 430,
      pageSize: 100,
      partnerPage: 3 * PARTNER_PAGE_LIMIT,
    },
    {
      why: 'responses spanning several whole stored pages',
      sourceId: 'ov-span',
      date: '2026-10-02',
      records: 250,
      pageSize: 25,
      partnerPage: 100,
    },
  ];
  for (const c of cases) {
    void it(`${c.why}: every record stored once, one request per partner page`, async () => {
      counts.set(c.sourceId, c.records);
      await kit.addSource({
        id: c.sourceId,
        job: OVERSIZE_JOB_TYPE,
        baseUrl: partner.url,
        pageSize: c.pageSize,
        config: { partnerLimit: c.partnerPage },
      });
      const run = await kit.run(c.sourceId, c.date);
      assert.equal(run.status, 'succeeded', `run failed: ${run.errorType}`);
      await assertStoredOnce(kit.db, c, run.row.id);
    });
  }

  void it('a run that continues as new after every page carries the carry cursors over in its input', async () => {
    const c: Case = {
      sourceId: 'ov-continue',
      date: '2026-10-06',
      records: 250,
      pageSize: 25,
      partnerPage: 100,
    };
    counts.set(c.sourceId, c.records);
    await kit.addSource({
      id: c.sourceId,
      job: OVERSIZE_JOB_TYPE,
      baseUrl: partner.url,
      pageSize: c.pageSize,
      config: { partnerLimit: c.partnerPage },
    });
    const ctx = { temporal: kit.client, prisma: kit.prisma, taskQueue: kit.worker.taskQueue };
    const { started, result, last } = await kit.worker.run(async () => {
      const prepared = await prepareFetch(ctx, { sourceId: c.sourceId, date: c.date, requestedBy: 'test' });
      const started = await launchFetch(ctx, {
        ...prepared,
        input: { ...prepared.input, pagesPerExecution: 1 },
      });
      const result = await started.handle.result();
      const last = await kit.client.workflow.getHandle(started.workflowId).describe();
      return { started, result, last };
    });
    assert.equal(result.status, 'succeeded');
    assert.notEqual(last.runId, started.runId, 'the run went on in later executions');
    if (result.status !== 'succeeded') return;
    await assertStoredOnce(kit.db, c, result.fetchRunId);
  });

  void it('the declarative http job with a partner page size of its own: one request per partner page', async () => {
    const c: Case = { sourceId: 'ov-http', date: '2026-10-03', records: 250, pageSize: 25, partnerPage: 100 };
    counts.set(c.sourceId, c.records);
    await kit.addSource({
      id: c.sourceId,
      job: 'http',
      baseUrl: partner.url,
      pageSize: c.pageSize,
      // The page size is the partner's: a fixed query parameter, not the engine's limit.
      config: {
        request: { path: `/sources/${c.sourceId}/records`, query: { date: '{date}', limit: '100' } },
        auth: { type: 'none' },
        records: { path: 'records' },
        pagination: { type: 'cursor', path: 'nextCursor', param: 'cursor' },
      },
    });
    const run = await kit.run(c.sourceId, c.date);
    assert.equal(run.status, 'succeeded', `run failed: ${run.errorType}`);
    await assertStoredOnce(kit.db, c, run.row.id);
  });

  void it(`a response of ${MAX_RECORDS_PER_RESPONSE} records is stored whole; one more fails TOO_MANY_RECORDS, storing nothing`, async () => {
    const most = `ov-huge-${MAX_RECORDS_PER_RESPONSE}`;
    const over = `ov-huge-${MAX_RECORDS_PER_RESPONSE + 1}`;
    for (const id of [most, over]) {
      await kit.addSource({ id, job: 'oversize-huge', baseUrl: partner.url, pageSize: 1000 });
    }
    const stored = await kit.run(most, '2026-10-04');
    assert.equal(stored.status, 'succeeded', `run failed: ${stored.errorType}`);
    assert.deepEqual([stored.row.pagesStored, stored.row.recordsStored], [10, MAX_RECORDS_PER_RESPONSE]);
    assert.equal(
      await kit.prisma.fetchedRecord.count({ where: { sourceId: most } }),
      MAX_RECORDS_PER_RESPONSE,
    );

    const refused = await kit.run(over, '2026-10-04');
    assert.deepEqual([refused.status, refused.errorType], ['dead_lettered', 'InvalidResponse']);
    const letter = await kit.prisma.deadLetter.findFirstOrThrow({ where: { fetchRunId: refused.row.id } });
    assert.equal(letter.errorCode, 'TOO_MANY_RECORDS');
    assert.equal(await kit.prisma.fetchedRecord.count({ where: { sourceId: over } }), 0);
    assert.equal(await kit.prisma.fetchedPage.count({ where: { key: { contains: `:${over}:` } } }), 0);
  });
});

/** Where the run stands when worker A dies, with the first response staged as pages 0..3. */
const AT_CRASH: Partial<Record<WorkerCrashPoint, { pagesStored: number; staged: number[] }>> = {
  // Page 0's store rolled back: page 0 and the three pages its response carried are staged.
  'before-commit': { pagesStored: 0, staged: [0, 1, 2, 3] },
  // Page 0 is stored; the three carried pages wait staged for their fetchPage.
  'after-commit': { pagesStored: 1, staged: [1, 2, 3] },
};

void describe('oversized pages: a worker killed between the staging of carried pages and their store', () => {
  for (const [point, atCrash] of Object.entries(AT_CRASH) as [
    WorkerCrashPoint,
    (typeof AT_CRASH)[WorkerCrashPoint],
  ][]) {
    void it(
      `killed ${point}: the next worker stores everything once, asking the partner nothing again`,
      { timeout: 300_000 },
      async () => {
        const c: Case = {
          sourceId: `ov-crash-${point}`,
          date: '2026-10-05',
          records: 250,
          pageSize: 25,
          partnerPage: 100,
        };
        counts.set(c.sourceId, c.records);
        const db = await useTestDatabase();
        const client = await testClient();
        let a: ReturnType<typeof spawnTs> | undefined;
        try {
          await createSource(db.prisma, c.sourceId, partner.url, {
            jobType: OVERSIZE_JOB_TYPE,
            pageSize: c.pageSize,
            config: { partnerLimit: c.partnerPage },
            // The quick preset notices a dead worker's activity sooner.
            retryPolicy: 'partnerHttpQuick',
          });
          const recovery = await testWorker(
            testDeps(db.prisma, {
              jobs: createJobRegistry(jobsWithOversize),
              partnerPageLimit: PARTNER_PAGE_LIMIT,
            }),
          );
          const { taskQueue } = recovery;
          a = spawnTs(['test/helpers/oversized-pages.ts'], {
            DATABASE_URL: db.url,
            TEMPORAL_ADDRESS: temporalAddress(),
            OVERSIZE_TASK_QUEUE: taskQueue,
            OVERSIZE_CRASH_POINT: point,
            OVERSIZE_PARTNER_PAGE_LIMIT: String(PARTNER_PAGE_LIMIT),
          });
          const worker = a;
          await worker.waitFor(/oversize worker polling/, 120_000);
          const started = await startFetch(
            { temporal: client, prisma: db.prisma, taskQueue },
            { sourceId: c.sourceId, date: c.date, requestedBy: 'test' },
          );
          const exit = await within(worker.ended, 90_000, () => `worker A to die:\n${worker.output()}`);
          assert.deepEqual(exit, { code: null, signal: 'SIGKILL' }, worker.output());
          assert.match(worker.output(), new RegExp(`crash point ${point}: SIGKILL`));

          const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: c.sourceId } });
          const staged = await db.prisma.fetchedPage.findMany({
            where: { key: { contains: `:${c.sourceId}:` } },
            select: { key: true, recordCount: true },
          });
          assert.deepEqual(
            {
              pagesStored: run.pagesStored,
              staged: staged.map((p) => Number(p.key.split(':').pop())).sort((x, y) => x - y),
            },
            atCrash,
          );
          assert.ok(staged.every((p) => p.recordCount === c.pageSize));
          assert.equal(partner.ledger.count({ sourceId: c.sourceId, date: c.date }), 1);

          const result = await recovery.run(() =>
            within(started.handle.result(), 120_000, () => `the run of ${c.sourceId} to end`),
          );
          assert.deepEqual(result, {
            status: 'succeeded',
            fetchRunId: run.id,
            pages: Math.ceil(c.records / c.pageSize),
            records: c.records,
          });
          await assertStoredOnce(db, c, run.id);
        } finally {
          await a?.stop('SIGKILL', 5_000);
          await client.connection.close();
          await db.drop();
        }
      },
    );
  }
});
