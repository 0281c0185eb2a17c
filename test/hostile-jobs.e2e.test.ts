// Jobs that break the job API's contract, run through the real engine (job test kit: shared
// Temporal, a cloned PostgreSQL, the demo partner over sockets). Each is a small job defined here
// that reads the demo partner's records like the demo job, then misbehaves at one hook. Whatever a
// job does wrong, its run must end once — one dead letter, `dead_lettered`, a typed error — after
// a bounded number of attempts, never a crash loop, and a page its storePage failed on must leave
// nothing written.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { defineJob, type JobDefinition } from '../activities/job-api/index.ts';
import { fetchRecordsJob } from '../jobs/fetch-records/index.ts';
import type { PartnerRecord } from '../jobs/fetch-records/records-api.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import { localActivity } from './helpers/history-steps.ts';
import { jobTestKit, type JobKit, type KitRun } from './helpers/job-kit.ts';

const DATE = '2026-10-20';
const RECORDS = 30; // one page

/** Calls of each hostile job's hooks, by job type and hook. */
const calls = new Map<string, number>();
const count = (type: string, hook: string) => {
  const key = `${type}.${hook}`;
  calls.set(key, (calls.get(key) ?? 0) + 1);
};
const callsOf = (type: string, hook: string) => calls.get(`${type}.${hook}`) ?? 0;

/**
 * The demo job with `overrides` under another type: hooks not overridden are the demo job's
 * (counted), so each hostile job breaks exactly one thing.
 */
function hostile(
  type: string,
  overrides: Partial<JobDefinition<Record<string, never>, PartnerRecord>>,
): JobDefinition<Record<string, never>, PartnerRecord> {
  return defineJob<Record<string, never>, PartnerRecord>({
    type,
    description: `test-only job that breaks the job API (${type})`,
    recordId: (r) => r.id,
    async fetchPage(ctx) {
      count(type, 'fetchPage');
      return fetchRecordsJob.fetchPage(ctx);
    },
    async storePage(tx, records, ctx) {
      count(type, 'storePage');
      return fetchRecordsJob.storePage(tx, records, ctx);
    },
    ...overrides,
  });
}

/** A page of the demo partner, fetched for real, then handed on as `mangle` makes it. */
const mangled = (type: string, mangle: (page: { records: readonly PartnerRecord[] }) => unknown) =>
  hostile(type, {
    async fetchPage(ctx) {
      count(type, 'fetchPage');
      return mangle(await fetchRecordsJob.fetchPage(ctx)) as never;
    },
  });

const JOBS = [
  hostile('hj-boom', {
    fetchPage() {
      count('hj-boom', 'fetchPage');
      // Thrown synchronously, not as a rejection: the engine must classify both.
      throw new Error('boom');
    },
  }),
  mangled('hj-records-string', () => ({ records: 'x', nextCursor: null })),
  mangled('hj-cursor-number', (page) => ({ records: page.records, nextCursor: 5 })),
  hostile('hj-id-undefined', { recordId: () => undefined as unknown as string }),
  hostile('hj-id-empty', { recordId: () => '' }),
  hostile('hj-id-long', { recordId: (r) => `${r.id}-${'x'.repeat(200)}` }),
  hostile('hj-store-boom', {
    async storePage(tx, records, ctx) {
      count('hj-store-boom', 'storePage');
      // Writes the page's rows first: the rollback must take them back.
      await fetchRecordsJob.storePage(tx, records, ctx);
      throw new Error('store exploded');
    },
  }),
  hostile('hj-store-shape', {
    async storePage(tx, records, ctx) {
      count('hj-store-shape', 'storePage');
      await fetchRecordsJob.storePage(tx, records, ctx);
      return { events: 'nope' } as never;
    },
  }),
];

let partner: PartnerServer;
let kit: JobKit;

before(async () => {
  partner = await startPartner({ port: 0, recordCount: () => RECORDS });
  kit = await jobTestKit({ jobs: [fetchRecordsJob, ...JOBS] });
});
after(async () => {
  await kit?.close();
  await partner?.close();
});

/** The attempt number of each activity of the run's history, regular or local (Temporal records the last one's). */
async function attempts(run: KitRun): Promise<Map<string, number[]>> {
  const history = await kit.client.workflow.getHandle(run.row.workflowId).fetchHistory();
  const typeOf = new Map<string, string>();
  const byType = new Map<string, number[]>();
  for (const e of history.events ?? []) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) typeOf.set(String(e.eventId), scheduled.activityType?.name ?? '?');
    const started = e.activityTaskStartedEventAttributes;
    if (started) {
      const type = typeOf.get(String(started.scheduledEventId)) ?? '?';
      byType.set(type, [...(byType.get(type) ?? []), started.attempt ?? 0]);
    }
    // The database steps are local activities: their marker says the attempt.
    const local = localActivity(e);
    if (local) byType.set(local.type, [...(byType.get(local.type) ?? []), local.attempt]);
  }
  return byType;
}

/** Runs a source of `job` and checks the run ended once, as a dead letter of `type`/`code`. */
async function deadLettered(job: string, errorType: string, code: string): Promise<KitRun> {
  const sourceId = `${job}-src`;
  await kit.addSource({ id: sourceId, job, baseUrl: partner.url });
  const run = await kit.run(sourceId, DATE);
  assert.equal(run.status, 'dead_lettered', `${job}: ${run.status}`);
  assert.equal(run.errorType, errorType);
  assert.equal(run.row.errorClass, errorType);
  const letters = await kit.prisma.deadLetter.findMany({ where: { sourceId } });
  assert.deepEqual(
    letters.map((l) => [l.errorType, l.errorCode, l.attempts]),
    [[errorType, code, 1]],
    'one dead letter',
  );
  return run;
}

/** Nothing of the run's page reached the business table, the outbox or the idempotency records. */
async function nothingStored(run: KitRun, job: string): Promise<void> {
  const sourceId = run.row.sourceId;
  assert.equal(await kit.prisma.fetchedRecord.count({ where: { sourceId } }), 0, 'no business row');
  assert.equal(
    await kit.prisma.outboxEvent.count({ where: { aggregateId: run.row.id } }),
    0,
    'no outbox event',
  );
  const key = pageKeyFor({ jobType: job, sourceId, businessDate: DATE }, 0);
  assert.equal(await kit.prisma.idempotencyRecord.count({ where: { key } }), 0, 'no idempotency record');
  assert.equal(run.row.pagesStored, 0);
}

describe('hostile jobs', () => {
  it('hostile-jobs: a fetchPage throwing a plain Error is Internal, attempted once, one dead letter', async () => {
    const run = await deadLettered('hj-boom', 'Internal', 'UNCLASSIFIED');
    assert.match(run.row.errorMessage ?? '', /job hj-boom fetchPage: unexpected error \(Error: boom\)/);
    assert.equal(callsOf('hj-boom', 'fetchPage'), 1, 'called once: not retried');
    assert.deepEqual((await attempts(run)).get('fetchPage'), [1], 'one activity, its first attempt');
    await nothingStored(run, 'hj-boom');
  });

  it('hostile-jobs: a page that is not {records: [], nextCursor} is InvalidResponse PAGE_SHAPE', async () => {
    for (const job of ['hj-records-string', 'hj-cursor-number']) {
      const run = await deadLettered(job, 'InvalidResponse', 'PAGE_SHAPE');
      assert.equal(callsOf(job, 'fetchPage'), 1, `${job}: not retried`);
      assert.equal(partner.ledger.entries({ sourceId: `${job}-src` }).length, 1, `${job}: asked once`);
      assert.deepEqual((await attempts(run)).get('fetchPage'), [1]);
      assert.equal(callsOf(job, 'storePage'), 0);
      await nothingStored(run, job);
    }
  });

  it('hostile-jobs: records without an id (undefined or empty) are InvalidResponse RECORD_WITHOUT_ID', async () => {
    for (const job of ['hj-id-undefined', 'hj-id-empty']) {
      const run = await deadLettered(job, 'InvalidResponse', 'RECORD_WITHOUT_ID');
      assert.equal(callsOf(job, 'fetchPage'), 1, `${job}: not retried`);
      assert.deepEqual((await attempts(run)).get('fetchPage'), [1]);
      assert.equal(callsOf(job, 'storePage'), 0);
      await nothingStored(run, job);
    }
  });

  it('hostile-jobs: a record id over 200 characters is InvalidResponse RECORD_ID_TOO_LONG', async () => {
    const run = await deadLettered('hj-id-long', 'InvalidResponse', 'RECORD_ID_TOO_LONG');
    assert.equal(callsOf('hj-id-long', 'fetchPage'), 1);
    assert.deepEqual((await attempts(run)).get('fetchPage'), [1]);
    await nothingStored(run, 'hj-id-long');
  });

  it('hostile-jobs: a storePage throwing a plain Error is Internal and its transaction rolls back: nothing of the page written', async () => {
    const run = await deadLettered('hj-store-boom', 'Internal', 'UNCLASSIFIED');
    assert.match(run.row.errorMessage ?? '', /job hj-store-boom storePage: unexpected error/);
    assert.equal(callsOf('hj-store-boom', 'fetchPage'), 1);
    assert.equal(callsOf('hj-store-boom', 'storePage'), 1, 'called once: not retried');
    assert.deepEqual((await attempts(run)).get('storePage'), [1]);
    await nothingStored(run, 'hj-store-boom');
  });

  it('hostile-jobs: a storePage returning {events: "nope"} is InvalidResponse STORE_RESULT_SHAPE, rolled back', async () => {
    const run = await deadLettered('hj-store-shape', 'InvalidResponse', 'STORE_RESULT_SHAPE');
    assert.equal(callsOf('hj-store-shape', 'storePage'), 1, 'called once: not retried');
    assert.deepEqual((await attempts(run)).get('storePage'), [1]);
    await nothingStored(run, 'hj-store-shape');
  });
});
