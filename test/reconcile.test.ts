// `durable-fetch reconcile` (R11): real runs fetched through the shared Temporal server
// into a cloned database from the demo partner, then reconciled by the real CLI (a child process
// that reads the partner over sockets) and by `reconcileRuns`. A clean date has no mismatch; each
// tampering (a deleted record, a dead outbox event, a submission voided behind our back, a partner
// that changed or cannot be reached, an unsettled ledger row) is reported under its code, exit 1.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { createHttpClient, type HttpClient } from '../activities/http.ts';
import { reconcileRuns, type ReconcileReport, type ReconcileSelector } from '../client/reconcile/index.ts';
import { startFetch, type DurableFetchContext } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import type { DownstreamState, RunStatus } from '../prisma/generated/client.ts';
import { idempotencyKeyFor, workflowIdFor } from '../contract/business-key.ts';
import { lines, runCli, type CliResult } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { temporalAddress, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const RECORDS = 60;
const CLEAN = '2026-06-10';
const TAMPER = '2026-06-11';
const DRIFT = '2026-06-12';
const MANUAL = '2026-06-13';
const MANY = '2026-06-14';
const JOBS = '2026-06-15';
const TOKEN_REF = 'DF_SECRET_REC_TOKEN';
const TOKEN = 'tok-rec-7d2e91';

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let http: HttpClient;
let ctx: DurableFetchContext;
/** The CLI's environment: the test database, Temporal and the source's secret. */
let env: Record<string, string>;
/** Records the partner serves for `<source>/<date>` when not the default. */
const recordCounts = new Map<string, number>();

const secret = (ref: string) => (ref === TOKEN_REF ? TOKEN : undefined);

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({
    port: 0,
    recordCount: (sourceId, date) => recordCounts.get(`${sourceId}/${date}`) ?? RECORDS,
  });
  client = await testClient();
  worker = await testWorker(testDeps(db.prisma, { secret }));
  http = createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 5_000 });
  ctx = {
    temporal: client,
    prisma: db.prisma,
    taskQueue: worker.taskQueue,
    now: () => new Date('2026-11-29T12:00:00Z'),
  };
  env = { DATABASE_URL: db.url, TEMPORAL_ADDRESS: temporalAddress(), [TOKEN_REF]: TOKEN };

  await createSource(db.prisma, 'rec-plain', partner.url, { pageSize: 25 });
  await createSource(db.prisma, 'rec-submit', partner.url);
  await db.prisma.source.update({ where: { id: 'rec-submit' }, data: { submitSummary: true } });
  await createSource(db.prisma, 'rec-auth', partner.url, { credentialsRef: TOKEN_REF });
  await createSource(db.prisma, 'rec-gone', partner.url);
  const runs: [string, string][] = [
    ['rec-plain', CLEAN],
    ['rec-submit', CLEAN],
    ['rec-auth', CLEAN],
    ['rec-plain', TAMPER],
    ['rec-submit', TAMPER],
    ['rec-plain', DRIFT],
    ['rec-gone', DRIFT],
  ];
  const results = await worker.run(() =>
    Promise.all(
      runs.map(async ([sourceId, date]) => {
        const started = await startFetch(ctx, { sourceId, date, requestedBy: 'test' });
        return started.handle.result();
      }),
    ),
  );
  assert.deepEqual(
    results.map((r) => r.status),
    runs.map(() => 'succeeded'),
  );
});

after(async () => {
  await http?.close();
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

const detail = (r: CliResult) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

function reconcile(selector: ReconcileSelector): Promise<ReconcileReport> {
  return reconcileRuns({ prisma: db.prisma, http, secret }, selector);
}

/** `<source>/<date>` → mismatch codes, sorted, for every run of the report. */
function codes(report: ReconcileReport): Record<string, string[]> {
  return Object.fromEntries(
    report.runs.map((r) => [`${r.sourceId}/${r.businessDate}`, r.mismatches.map((m) => m.code).sort()]),
  );
}

/** Exit 1 after a full report: the mismatch lines, the summary, one error line on stderr. */
function assertMismatches(result: CliResult, count: number): string[] {
  assert.equal(result.code, 1, detail(result));
  const out = lines(result.stdout);
  assert.match(out.at(-1) ?? '', new RegExp(`, ${count} mismatch(es)?$`), detail(result));
  assert.deepEqual(lines(result.stderr), [`durable-fetch: ${count} mismatch${count === 1 ? '' : 'es'}`]);
  assert.doesNotMatch(result.stderr, /^\s+at /m, detail(result));
  return out;
}

/** A user error: exit 1, nothing on stdout, exactly one `durable-fetch: …` line on stderr. */
function assertOneLineError(result: CliResult, pattern: RegExp): void {
  assert.equal(result.code, 1, detail(result));
  assert.equal(result.stdout, '', detail(result));
  const errLines = lines(result.stderr);
  assert.equal(errLines.length, 1, detail(result));
  assert.match(errLines[0] ?? '', /^durable-fetch: /, detail(result));
  assert.match(errLines[0] ?? '', pattern, detail(result));
}

async function runOf(sourceId: string, date: string) {
  return db.prisma.fetchRun.findFirstOrThrow({
    where: { sourceId, businessDate: new Date(`${date}T00:00:00Z`) },
  });
}

/** A run row written by hand (no workflow): for states a real run passes through briefly. */
async function insertRun(
  sourceId: string,
  date: string,
  status: RunStatus,
  jobType = 'fetch-records',
): Promise<string> {
  const key = { jobType, sourceId, businessDate: date };
  const run = await db.prisma.fetchRun.create({
    data: {
      jobType: key.jobType,
      sourceId,
      businessDate: new Date(`${date}T00:00:00Z`),
      payload: { sourceId, businessDate: date, requestedBy: 'test' },
      idempotencyKey: idempotencyKeyFor(key),
      status,
      scheduledAt: new Date(),
      correlationId: randomUUID(),
      workflowId: workflowIdFor(key),
    },
  });
  return run.id;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  assert.ok(address && typeof address === 'object');
  return address.port;
}

describe('reconcile', () => {
  it('a clean date: every run ✓ with its counts, 0 mismatches, exit 0; the partner was read with the source’s token', async () => {
    const result = await runCli(['reconcile', '--date', CLEAN], env);
    assert.equal(result.code, 0, detail(result));
    assert.equal(result.stderr, '', detail(result));
    const out = lines(result.stdout);
    assert.deepEqual(
      out.filter((l) => !l.startsWith(' ')),
      [
        `✓ rec-auth/${CLEAN} succeeded: 60 records, 1 page, 2 events, 0 compensations`,
        `✓ rec-plain/${CLEAN} succeeded: 60 records, 3 pages, 4 events, 0 compensations`,
        `✓ rec-submit/${CLEAN} succeeded: 60 records, 1 page, 2 events, 1 compensation`,
        '3 runs, 0 mismatches',
      ],
      detail(result),
    );
    // No publisher runs here: pending events are noted, not mismatches.
    assert.ok(
      out.some((l) => /^\s+· OUTBOX_PENDING: 4 outbox events not delivered yet/.test(l)),
      detail(result),
    );
    const reads = partner.ledger
      .entries({ sourceId: 'rec-auth', date: CLEAN })
      .filter((e) => e.idempotencyKey?.startsWith('reconcile:'));
    assert.ok(reads.length >= 2, 'every partner page read (60 records, at most 50 per page)');
    assert.ok(
      reads.every((e) => e.auth && e.status === 200),
      JSON.stringify(reads),
    );
  });

  it('--json prints the report and still exits 0 when clean; every run compared with the partner', async () => {
    const result = await runCli(['reconcile', '--date', CLEAN, '--json'], env);
    assert.equal(result.code, 0, detail(result));
    const report = JSON.parse(result.stdout) as ReconcileReport;
    assert.equal(report.mismatches, 0);
    assert.deepEqual(
      report.runs.map((r) => [r.sourceId, r.status, r.records, r.partnerRecords, r.mismatches.length]),
      [
        ['rec-auth', 'succeeded', 60, 60, 0],
        ['rec-plain', 'succeeded', 60, 60, 0],
        ['rec-submit', 'succeeded', 60, 60, 0],
      ],
    );
  });

  it('without the source’s secret the partner cannot be read: PARTNER_UNREACHABLE, exit 1', async () => {
    const result = await runCli(['reconcile', '--date', CLEAN, '--source', 'rec-auth'], {
      ...env,
      [TOKEN_REF]: undefined,
    });
    const out = assertMismatches(result, 1);
    assert.match(out[0] ?? '', /^✗ rec-auth\/2026-06-10 succeeded: /);
    assert.match(out[1] ?? '', /^\s+✗ PARTNER_UNREACHABLE: .*DF_SECRET_REC_TOKEN/, detail(result));
  });

  it('one run, by FetchRun id or by <source>/<date>', async () => {
    const run = await runOf('rec-plain', CLEAN);
    for (const id of [
      run.id,
      `rec-plain/${CLEAN}`,
      workflowIdFor({ jobType: 'fetch-records', sourceId: 'rec-plain', businessDate: CLEAN }),
    ]) {
      const result = await runCli(['reconcile', id], env);
      assert.equal(result.code, 0, detail(result));
      const out = lines(result.stdout).filter((l) => !l.startsWith(' '));
      assert.deepEqual(out, [
        `✓ rec-plain/${CLEAN} succeeded: 60 records, 3 pages, 4 events, 0 compensations`,
        '1 run, 0 mismatches',
      ]);
    }
  });

  it('tampering is reported under its code: a deleted record, a dead outbox event, a voided submission', async () => {
    assert.deepEqual(codes(await reconcile({ date: TAMPER })), {
      [`rec-plain/${TAMPER}`]: [],
      [`rec-submit/${TAMPER}`]: [],
    });

    const gone = `rec-plain-${TAMPER}-00007`;
    assert.equal(
      (await db.prisma.fetchedRecord.deleteMany({ where: { sourceId: 'rec-plain', externalId: gone } }))
        .count,
      1,
    );
    const afterDelete = await reconcile({ runId: `rec-plain/${TAMPER}` });
    assert.deepEqual(codes(afterDelete), { [`rec-plain/${TAMPER}`]: ['RECORD_MISSING'] });
    assert.match(afterDelete.runs[0]?.mismatches[0]?.message ?? '', new RegExp(gone));

    const plain = await runOf('rec-plain', TAMPER);
    const completed = await db.prisma.outboxEvent.findFirstOrThrow({
      where: { aggregateId: plain.id, topic: 'fetch.run_completed' },
    });
    await db.prisma.outboxEvent.update({ where: { id: completed.id }, data: { status: 'dead' } });
    assert.deepEqual(codes(await reconcile({ runId: plain.id })), {
      [`rec-plain/${TAMPER}`]: ['OUTBOX_DEAD', 'RECORD_MISSING'],
    });

    const action = await db.prisma.downstreamAction.findFirstOrThrow({
      where: { run: { sourceId: 'rec-submit', businessDate: new Date(`${TAMPER}T00:00:00Z`) } },
    });
    assert.equal(action.state, 'confirmed');
    assert.ok(partner.submissions.voidSubmission(action.partnerId ?? '')?.changed);
    assert.deepEqual(codes(await reconcile({ date: TAMPER, sourceId: 'rec-submit' })), {
      [`rec-submit/${TAMPER}`]: ['ACTION_VOIDED_AT_PARTNER'],
    });

    const result = await runCli(['reconcile', '--date', TAMPER], env);
    const out = assertMismatches(result, 3);
    assert.equal(out.at(-1), '2 runs, 3 mismatches');
    const plainAt = out.findIndex((l) =>
      l.startsWith(`✗ rec-plain/${TAMPER} succeeded: 60 records, 3 pages`),
    );
    const submitAt = out.findIndex((l) => l.startsWith(`✗ rec-submit/${TAMPER} succeeded: 60 records`));
    assert.ok(plainAt >= 0 && submitAt > plainAt, detail(result));
    const plainBlock = out.slice(plainAt + 1, submitAt).join('\n');
    assert.match(
      plainBlock,
      /✗ RECORD_MISSING: page events list 1 record with no business row: rec-plain-2026-06-11-00007 \(expected 60, actual 59\)/,
    );
    assert.match(plainBlock, new RegExp(`✗ OUTBOX_DEAD: .*fetch\\.run_completed ${completed.id}`));
    assert.match(
      out.slice(submitAt + 1).join('\n'),
      new RegExp(`✗ ACTION_VOIDED_AT_PARTNER: .*${action.partnerId ?? '-'} is voided`),
    );

    const json = await runCli(['reconcile', '--date', TAMPER, '--json'], env);
    assert.equal(json.code, 1, detail(json));
    const report = JSON.parse(json.stdout) as ReconcileReport;
    assert.equal(report.mismatches, 3);
    assert.deepEqual(codes(report), {
      [`rec-plain/${TAMPER}`]: ['OUTBOX_DEAD', 'RECORD_MISSING'],
      [`rec-submit/${TAMPER}`]: ['ACTION_VOIDED_AT_PARTNER'],
    });
    const missing = report.runs[0]?.mismatches.find((m) => m.code === 'RECORD_MISSING');
    assert.deepEqual([missing?.expected, missing?.actual, missing?.ids], [60, 59, [gone]]);
    const dead = report.runs[0]?.mismatches.find((m) => m.code === 'OUTBOX_DEAD');
    assert.deepEqual(dead?.ids, [completed.id]);
    const voided = report.runs[1]?.mismatches[0];
    assert.deepEqual(
      [voided?.expected, voided?.actual, voided?.actionId],
      ['confirmed', 'voided', action.id],
    );
  });

  it('the partner’s records against the run’s: missing at our side, extra at our side, counts off', async () => {
    const key = `rec-plain/${DRIFT}`;
    recordCounts.set(key, RECORDS + 2);
    const more = await reconcile({ runId: key });
    assert.deepEqual(codes(more), { [key]: ['MISSING_AT_OURS'] });
    assert.match(
      more.runs[0]?.mismatches[0]?.message ?? '',
      /2 records .*rec-plain-2026-06-12-00061, rec-plain-2026-06-12-00062/,
    );
    assert.equal(more.runs[0]?.partnerRecords, RECORDS + 2);

    recordCounts.set(key, RECORDS - 1);
    const fewer = await reconcile({ runId: key });
    assert.deepEqual(codes(fewer), { [key]: ['EXTRA_AT_OURS'] });
    assert.match(fewer.runs[0]?.mismatches[0]?.message ?? '', /rec-plain-2026-06-12-00060/);
    recordCounts.delete(key);

    const run = await runOf('rec-plain', DRIFT);
    await db.prisma.fetchRun.update({
      where: { id: run.id },
      data: { recordsStored: RECORDS + 1, pagesStored: 4 },
    });
    assert.deepEqual(codes(await reconcile({ runId: key })), {
      [key]: ['COMPLETION_EVENT_COUNTS', 'PAGES_COUNT', 'RECORDS_COUNT'],
    });
  });

  it('a partner that cannot be reached is a mismatch, never a crash', async () => {
    await db.prisma.source.update({
      where: { id: 'rec-gone' },
      data: { baseUrl: `http://127.0.0.1:${await closedPort()}` },
    });
    const result = await runCli(['reconcile', '--date', DRIFT, '--source', 'rec-gone'], env);
    const out = assertMismatches(result, 1);
    assert.deepEqual(
      out.slice(0, 2).map((l) => l.replace(/: cannot read .*/, '')),
      [
        `✗ rec-gone/${DRIFT} succeeded: 60 records, 1 page, 2 events, 0 compensations`,
        '    ✗ PARTNER_UNREACHABLE',
      ],
    );
    assert.match(out[1] ?? '', /network error/);
  });

  it('the compensation ledger against the partner: unsettled, compensated but live, not_applied but live, uncompensated', async () => {
    // Hand-written runs and ledger rows: the states a real run passes through on its way.
    const cases: [string, RunStatus, DownstreamState, string | null][] = [
      ['rec-submit', 'dead_lettered', 'unknown', null],
      ['rec-plain', 'compensated', 'compensated', 'live'],
      ['rec-auth', 'cancelled', 'not_applied', 'live-other'],
      ['rec-gone', 'dead_lettered', 'confirmed', 'live'],
    ];
    await db.prisma.source.update({ where: { id: 'rec-gone' }, data: { baseUrl: partner.url } });
    const ids: Record<string, string> = {};
    for (const [sourceId, status, state, atPartner] of cases) {
      const runId = await insertRun(sourceId, MANUAL, status);
      const reference = `fetch-records:${sourceId}:${MANUAL}:submit-summary:r1`;
      const submission = atPartner ? partner.submissions.create(reference, { pages: 1 }) : undefined;
      const row = await db.prisma.downstreamAction.create({
        data: {
          fetchRunId: runId,
          businessKey: `fetch-records:${sourceId}:${MANUAL}`,
          key: reference,
          round: 1,
          action: 'submit-summary',
          step: 1,
          reference,
          state,
          partnerId: atPartner === 'live' ? (submission?.id ?? null) : null,
        },
      });
      ids[sourceId] = row.id;
    }
    const report = await reconcile({ date: MANUAL });
    assert.deepEqual(codes(report), {
      [`rec-auth/${MANUAL}`]: ['NOT_APPLIED_BUT_LIVE'],
      [`rec-gone/${MANUAL}`]: ['UNCOMPENSATED_ACTION'],
      [`rec-plain/${MANUAL}`]: ['COMPENSATED_BUT_LIVE'],
      [`rec-submit/${MANUAL}`]: ['UNSETTLED_ACTION'],
    });
    const unsettled = report.runs.find((r) => r.sourceId === 'rec-submit')?.mismatches[0];
    assert.equal(unsettled?.actionId, ids['rec-submit']);
    assert.deepEqual(unsettled?.actual, { state: 'unknown', partner: [] });

    // A succeeded run of a submitting source without a confirmed row (its voided one forgotten).
    const tampered = await runOf('rec-submit', TAMPER);
    await db.prisma.downstreamAction.deleteMany({ where: { fetchRunId: tampered.id } });
    assert.deepEqual(codes(await reconcile({ runId: tampered.id })), {
      [`rec-submit/${TAMPER}`]: ['SUBMISSION_MISSING'],
    });
  });

  it('runs still in progress are noted, not compared; progress goes to stderr above 10 runs', async () => {
    for (let i = 0; i < 11; i++) {
      await createSource(db.prisma, `rec-many-${String(i).padStart(2, '0')}`, partner.url);
      await insertRun(`rec-many-${String(i).padStart(2, '0')}`, MANY, i % 2 === 0 ? 'running' : 'queued');
    }
    const result = await runCli(['reconcile', '--date', MANY], env);
    assert.equal(result.code, 0, detail(result));
    assert.deepEqual(lines(result.stderr), ['checked 10/11', 'checked 11/11']);
    const out = lines(result.stdout);
    assert.equal(out[0], `✓ rec-many-00/${MANY} running: 0 records, 0 pages, 0 events, 0 compensations`);
    assert.match(out[1] ?? '', /^\s+· IN_PROGRESS: run is running: not compared with the partner/);
    assert.equal(out.at(-1), '11 runs, 0 mismatches');
    assert.equal(partner.ledger.entries({ date: MANY }).length, 0, 'the partner was not asked');
  });

  it("--date with --job reconciles only that job type's runs of the date", async () => {
    await createSource(db.prisma, 'rec-rates', partner.url, { jobType: 'exchange-rates' });
    const ratesRun = await insertRun('rec-rates', JOBS, 'running', 'exchange-rates');
    const recordsRun = await insertRun('rec-plain', JOBS, 'running');
    const runsOf = async (args: string[]) => {
      const result = await runCli(['reconcile', '--date', JOBS, ...args, '--json'], env);
      assert.equal(result.code, 0, detail(result));
      return (JSON.parse(result.stdout) as ReconcileReport).runs.map((r) => [r.runId, r.jobType, r.sourceId]);
    };
    assert.deepEqual(await runsOf([]), [
      [recordsRun, 'fetch-records', 'rec-plain'],
      [ratesRun, 'exchange-rates', 'rec-rates'],
    ]);
    assert.deepEqual(await runsOf(['--job', 'exchange-rates']), [[ratesRun, 'exchange-rates', 'rec-rates']]);
    assert.deepEqual(await runsOf(['--job', 'fetch-records']), [[recordsRun, 'fetch-records', 'rec-plain']]);
    assert.deepEqual(await runsOf(['--job', 'exchange-rates', '--source', 'rec-plain']), []);
    const text = await runCli(['reconcile', '--date', JOBS, '--job', 'exchange-rates'], env);
    assert.equal(text.code, 0, detail(text));
    assert.equal(
      lines(text.stdout)[0],
      `✓ rec-rates/${JOBS} running: 0 records, 0 pages, 0 events, 0 compensations`,
    );
    assert.equal(lines(text.stdout).at(-1), '1 run, 0 mismatches');
    assert.deepEqual(
      (await reconcile({ date: JOBS, jobType: 'exchange-rates' })).runs.map((r) => r.runId),
      [ratesRun],
    );
  });

  it('invalid arguments: one line, exit 1', async () => {
    assertOneLineError(
      await runCli(['reconcile', `rec-plain/${CLEAN}`, '--job', 'fetch-records'], env),
      /--job goes with --date/,
    );
    assertOneLineError(
      await runCli(['reconcile', '--date', CLEAN, '--job', 'No Such'], env),
      /expected a job type/,
    );
    assertOneLineError(await runCli(['reconcile'], env), /exactly one of <runId>, --date or --stuck/);
    assertOneLineError(
      await runCli(['reconcile', `rec-plain/${CLEAN}`, '--date', CLEAN], env),
      /exactly one of <runId>, --date or --stuck/,
    );
    assertOneLineError(
      await runCli(['reconcile', `rec-plain/${CLEAN}`, '--source', 'rec-plain'], env),
      /--source goes with --date/,
    );
    assertOneLineError(
      await runCli(['reconcile', '--date', '2026-02-30'], env),
      /--date must be a calendar date/,
    );
    assertOneLineError(
      await runCli(['reconcile', `rec-nope/${CLEAN}`], env),
      /no run 'rec-nope\/2026-06-10'/,
    );
    assertOneLineError(
      await runCli(['reconcile', '--date', CLEAN, '--source', 'rec-nope'], env),
      /no source 'rec-nope'/,
    );
    assertOneLineError(
      await runCli(['reconcile', '--stuck', '--date', CLEAN], env),
      /exactly one of <runId>, --date or --stuck/,
    );
    assertOneLineError(
      await runCli(['reconcile', '--stuck', '--source', 'rec-plain'], env),
      /--source goes with --date/,
    );
    const help = await runCli(['reconcile', '--help'], {});
    assert.equal(help.code, 0, detail(help));
    assert.match(help.stdout, /records_stored and pages_stored/);
    assert.match(help.stdout, /PARTNER_UNREACHABLE/);
    assert.match(help.stdout, /--stuck/);
    assert.match(help.stdout, /WORKFLOW_TERMINATED/);
  });
});
