// The exchange-rates job under partner faults, end to end through the real engine (job test kit:
// shared Temporal, a cloned PostgreSQL, the demo partner over sockets). Business rows are judged
// by their natural key (exactly 56 per date), the journal by the partner's own effects ledger
// (posts and voids per reference). A SIGKILL after the store commit is test/crash-points-jobs.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { createHttpClient } from '../activities/http.ts';
import { retryDeadLetter } from '../client/index.ts';
import { makeRate } from '../partner/rates.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { compensationWorkflowIdFor } from '../contract/business-key.ts';
import type { fetchRecordsWorkflow } from '../workflows/fetch-records.ts';
import type { CompensateRunResult } from '../contract/types.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';

const SECRET_REF = 'DF_SECRET_FX_FAULTS';
const TOKEN = 'tok-fx-faults';
const PAIRS = 56;
const PAGE_SIZE = 25; // pages of 25 + 25 + 6 pairs
const DATE = '2026-10-14';
/** The cursor of page 1: the id of the last pair of page 0. */
const PAGE_1 = makeRate(PAGE_SIZE - 1, DATE).id;
/** The replay test's own date: the partner's ledger of rates requests is per date, not per source. */
const REPLAY_DATE = '2026-10-15';

let partner: PartnerServer;
/** Partner calls may take a minute here: only a fault's own end, or a cancel, ends one. */
let kit: JobKit;
/** Partner calls time out after 1 s here, so a held call is given up by the client. */
let quick: JobKit;

before(async () => {
  partner = await startPartner({ port: 0, ratesToken: TOKEN });
  const secrets = { [SECRET_REF]: TOKEN };
  kit = await jobTestKit({
    secrets,
    deps: { http: createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 60_000 }) },
  });
  quick = await jobTestKit({
    secrets,
    deps: { http: createHttpClient({ connectTimeoutMs: 1_000, responseTimeoutMs: 1_000 }) },
  });
});
after(async () => {
  await kit?.close();
  await quick?.close();
  await partner?.close();
});

/** A source of the job with its journal entry on, retrying quickly (the quick partner preset). */
async function fxSource(k: JobKit, id: string, extra: { submitMaxProcessingMs?: number } = {}) {
  await k.addSource({
    id,
    job: 'exchange-rates',
    baseUrl: partner.url,
    credentialsRef: SECRET_REF,
    config: { account: 'fx:faults' },
    pageSize: PAGE_SIZE,
    downstream: true,
  });
  await k.prisma.source.update({ where: { id }, data: { retryPolicy: 'partnerHttpQuick', ...extra } });
}

/** The reference of a run's journal entry: the action's key, one per claim of the run. */
const referenceOf = (sourceId: string, date = DATE, round = 1) =>
  `exchange-rates:${sourceId}:${date}:post-journal:r${round}`;

/** Rows of (source, date), and how many distinct natural keys they have. */
async function rows(k: JobKit, sourceId: string, date = DATE) {
  const found = await k.prisma.exchangeRate.findMany({
    where: { sourceId, rateDate: new Date(`${date}T00:00:00Z`) },
    select: { base: true, quote: true },
  });
  return { count: found.length, distinct: new Set(found.map((r) => `${r.base}/${r.quote}`)).size };
}

/** Page events of the run: one per page number, each id once. */
async function pageEvents(k: JobKit, fetchRunId: string) {
  const events = await k.prisma.outboxEvent.findMany({
    where: { aggregateId: fetchRunId, topic: 'fx.rates_stored' },
  });
  assert.equal(new Set(events.map((e) => e.id)).size, events.length);
  return events.map((e) => (e.payload as { pageNo: number }).pageNo).sort((a, b) => a - b);
}

/** The partner's journal under a reference: posts, voids, and entries still posted. */
function journal(sourceId: string, date = DATE, round = 1) {
  const reference = referenceOf(sourceId, date, round);
  const effects = partner.journal.effects(reference);
  return {
    posts: effects.filter((e) => e.action === 'post').length,
    voids: effects.filter((e) => e.action === 'void').length,
    live: partner.journal.list(reference).filter((e) => e.status === 'posted').length,
  };
}

async function runRow(k: JobKit, sourceId: string) {
  return k.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
}

async function ledgerRow(k: JobKit, sourceId: string) {
  const all = await k.prisma.downstreamAction.findMany({ where: { run: { sourceId } } });
  assert.equal(all.length, 1, 'one ledger row');
  const row = all[0];
  assert.ok(row);
  assert.equal(row.reference, referenceOf(sourceId));
  return row;
}

/** Waits (bounded) until the partner has posted the run's entry; the post's answer may be held. */
async function untilPosted(sourceId: string): Promise<void> {
  for (let i = 0; i < 400 && journal(sourceId).posts === 0; i++) await sleep(50);
  assert.equal(journal(sourceId).posts, 1, 'the partner posted the entry');
}

/** Runs the date, lets `during` act on it, and waits for the run and its compensation to end. */
async function runAndCompensate(
  k: JobKit,
  sourceId: string,
  during: (h: WorkflowHandle) => Promise<void>,
): Promise<{ failure: unknown; compensation: CompensateRunResult }> {
  return k.runWith(sourceId, DATE, async (handle) => {
    await during(handle);
    const failure = await handle.result().then(
      () => undefined,
      (err: unknown) => err,
    );
    const compensation = k.client.workflow.getHandle<() => Promise<CompensateRunResult>>(
      compensationWorkflowIdFor({ jobType: 'exchange-rates', sourceId, businessDate: DATE }, 1),
    );
    return { failure, compensation: await compensation.result() };
  });
}

describe('exchange-rates under partner faults', () => {
  it('a page the partner answers 503 twice, then 200: one row per natural key, one event per page', async () => {
    await fxSource(kit, 'fxf-retry');
    partner.faults.add({
      route: 'rates',
      date: DATE,
      startingAfter: PAGE_1,
      kind: 'status',
      status: 503,
      times: 2,
    });
    const run = await kit.run('fxf-retry', DATE);
    assert.equal(run.status, 'succeeded', `${run.status} (${run.errorType})`);
    assert.deepEqual(await rows(kit, 'fxf-retry'), { count: PAIRS, distinct: PAIRS });
    assert.deepEqual(await pageEvents(kit, run.row.id), [0, 1, 2]);
    assert.deepEqual(
      partner.ledger.entries({ date: DATE, startingAfter: PAGE_1 }).map((e) => e.status),
      [503, 503, 200],
      'page 1 retried until it came',
    );
    assert.deepEqual(journal('fxf-retry'), { posts: 1, voids: 0, live: 1 });
  });

  it('a dead letter replayed after its cause was fixed: 56 rows for the date, stored pages not fetched again', async () => {
    const sourceId = 'fxf-replay';
    await fxSource(kit, sourceId);
    // A 422 is permanent: page 0 is stored, then the run dead-letters on page 1.
    partner.faults.add({
      route: 'rates',
      date: REPLAY_DATE,
      startingAfter: PAGE_1,
      kind: 'status',
      status: 422,
      times: 1,
    });
    const failed = await kit.run(sourceId, REPLAY_DATE);
    assert.equal(failed.status, 'dead_lettered');
    assert.equal(failed.errorType, 'InvalidInput');
    assert.deepEqual(await rows(kit, sourceId, REPLAY_DATE), { count: PAGE_SIZE, distinct: PAGE_SIZE });
    const letter = await kit.prisma.deadLetter.findFirstOrThrow({ where: { sourceId } });
    assert.deepEqual([letter.status, letter.errorCode], ['open', 'HTTP_422']);
    assert.deepEqual(
      journal(sourceId, REPLAY_DATE),
      { posts: 0, voids: 0, live: 0 },
      'nothing posted by a failed run',
    );
    assert.equal(partner.faults.list().length, 0, 'the fault is used up: fixed for the replay');

    const replayed = await kit.worker.run(async () => {
      const retried = await retryDeadLetter(
        { prisma: kit.prisma, temporal: kit.client, taskQueue: kit.worker.taskQueue },
        letter.id,
        { actor: 'ops-fx', reason: 'partner fixed the 422' },
      );
      assert.equal(retried.joined, false);
      return kit.client.workflow
        .getHandle<typeof fetchRecordsWorkflow>(retried.workflowId, retried.runId)
        .result();
    });
    assert.equal(replayed.status, 'succeeded');
    const run = await runRow(kit, sourceId);
    assert.deepEqual([run.id, run.status, run.attempt], [failed.row.id, 'succeeded', 2]);
    assert.deepEqual(await rows(kit, sourceId, REPLAY_DATE), { count: PAIRS, distinct: PAIRS });
    assert.deepEqual(await pageEvents(kit, run.id), [0, 1, 2]);
    assert.deepEqual(
      partner.ledger.entries({ date: REPLAY_DATE }).map((e) => [e.startingAfter, e.status]),
      [
        [null, 200],
        [PAGE_1, 422],
        [PAGE_1, 200],
        [makeRate(2 * PAGE_SIZE - 1, REPLAY_DATE).id, 200],
      ],
      'page 0 was stored before the failure and not fetched again',
    );
    assert.equal(
      (await kit.prisma.deadLetter.findUniqueOrThrow({ where: { id: letter.id } })).status,
      'retried',
    );
    // The replay is the run's second claim: its entry has the second claim's reference.
    assert.deepEqual(journal(sourceId, REPLAY_DATE, 2), { posts: 1, voids: 0, live: 1 });
    assert.deepEqual(journal(sourceId, REPLAY_DATE, 1), { posts: 0, voids: 0, live: 0 });
  });

  it('a run cancelled while the post’s answer is in flight: the entry is found by reference and voided', async () => {
    const sourceId = 'fxf-cancel';
    await fxSource(kit, sourceId);
    // The journal post is this job's last step that can be interrupted (posting is final: no
    // confirm, and completeRun is not cancellable). The partner books the entry, then holds the
    // answer: the operator's cancel lands with the effect made and its id not yet known.
    partner.faults.add({
      route: 'journal',
      action: 'post',
      reference: referenceOf(sourceId),
      phase: 'after',
      kind: 'delay',
      delayMs: 60_000,
    });
    const { failure, compensation } = await runAndCompensate(kit, sourceId, async (handle) => {
      await untilPosted(sourceId);
      await handle.cancel();
    });
    assert.ok(failure, 'the run did not succeed');
    assert.deepEqual(compensation, {
      compensated: 1,
      notApplied: 0,
      needsManual: 0,
      runStatus: 'compensated',
    });
    assert.deepEqual(journal(sourceId), { posts: 1, voids: 1, live: 0 });
    const row = await ledgerRow(kit, sourceId);
    assert.deepEqual([row.state, row.partnerState, row.attempts], ['compensated', 'voided', 1]);
    assert.equal((await runRow(kit, sourceId)).status, 'compensated');
    assert.deepEqual(await rows(kit, sourceId), { count: PAIRS, distinct: PAIRS }, 'the rates are kept');
  });

  it('a run that fails for good after the post (its source disabled meanwhile): the entry is voided once', async () => {
    const sourceId = 'fxf-disabled';
    await fxSource(kit, sourceId);
    // After the post the run still needs its source enabled (the post is recorded, then the
    // action's settling step re-checks the source): an operator disabling it is a permanent
    // PermissionDenied, so the run dead-letters and its entry must not stay booked. The answer is
    // held long enough for the test to disable the source first.
    partner.faults.add({
      route: 'journal',
      action: 'post',
      reference: referenceOf(sourceId),
      phase: 'after',
      kind: 'delay',
      delayMs: 5_000,
    });
    const { failure, compensation } = await runAndCompensate(kit, sourceId, async () => {
      await untilPosted(sourceId);
      await kit.prisma.source.update({ where: { id: sourceId }, data: { enabled: false } });
    });
    assert.ok(failure, 'the run did not succeed');
    assert.deepEqual(compensation, {
      compensated: 1,
      notApplied: 0,
      needsManual: 0,
      runStatus: 'compensated',
    });
    assert.deepEqual(journal(sourceId), { posts: 1, voids: 1, live: 0 });
    const row = await ledgerRow(kit, sourceId);
    assert.deepEqual([row.state, row.partnerState], ['compensated', 'voided']);
    const run = await runRow(kit, sourceId);
    assert.deepEqual([run.status, run.errorClass], ['compensated', 'PermissionDenied']);
    assert.equal(await kit.prisma.deadLetter.count({ where: { sourceId } }), 1);
  });

  it('a post whose answer is lost (connection reset after booking) is settled by lookup: exactly one entry', async () => {
    const sourceId = 'fxf-reset';
    await fxSource(kit, sourceId);
    partner.faults.add({
      route: 'journal',
      action: 'post',
      reference: referenceOf(sourceId),
      phase: 'after',
      kind: 'reset',
    });
    const run = await kit.run(sourceId, DATE);
    assert.equal(run.status, 'succeeded', `${run.status} (${run.errorType})`);
    assert.deepEqual(journal(sourceId), { posts: 1, voids: 0, live: 1 }, 'never posted blindly again');
    const row = await ledgerRow(kit, sourceId);
    assert.deepEqual(
      [row.state, row.attempts, row.lookups, row.partnerId],
      ['confirmed', 1, 1, partner.journal.list(referenceOf(sourceId))[0]?.id],
    );
  });

  it('a post the partner books after its client gave up (a late effect): found after the settle window, one live entry', async () => {
    const sourceId = 'fxf-late';
    // The partner declares up to 5 s of processing; it books the held post 4.5 s after receipt,
    // 3.5 s after the client (1 s timeout) gave up on it.
    await fxSource(quick, sourceId, { submitMaxProcessingMs: 5_000 });
    partner.faults.add({
      route: 'journal',
      action: 'post',
      reference: referenceOf(sourceId),
      kind: 'delay',
      delayMs: 4_500,
      lateEffectMs: 10_000,
    });
    const run = await quick.run(sourceId, DATE);
    assert.equal(run.status, 'succeeded', `${run.status} (${run.errorType})`);
    const posts = partner.ledger.entries({ action: 'post', reference: referenceOf(sourceId) });
    assert.deepEqual(
      posts.map((e) => [e.status, e.effect, e.late]),
      [[499, true, true]],
      'one call: the client left, the partner booked it late; never called again',
    );
    assert.deepEqual(journal(sourceId), { posts: 1, voids: 0, live: 1 });
    const row = await ledgerRow(quick, sourceId);
    assert.deepEqual(
      [row.state, row.attempts, row.partnerId],
      ['confirmed', 1, partner.journal.list(referenceOf(sourceId))[0]?.id],
    );
    assert.deepEqual(await rows(quick, sourceId), { count: PAIRS, distinct: PAIRS });
  });
});
