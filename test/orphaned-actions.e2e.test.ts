// "Terminated runs leave nothing hidden" (R4, R10, R11): a run terminated while its confirm call is
// held (no workflow code runs: its row stays `running`, its ledger row `confirmed`) is counted as an
// orphaned downstream action — in `durable-fetch status` (text and --json), in the worker's
// metrics, and as a `status --check` failure — while no sweep runs (DURABLE_FETCH_SWEEP_INTERVAL_MS
// =0). `reconcile --stuck` then settles it through the normal path: dead letter, compensation, the
// partner's submission voided exactly once, and the count back at 0. The partner's ledger and the
// database rows are the judge.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { compensationWorkflowIdFor } from '../contract/business-key.ts';
import type { CompensateRunResult } from '../contract/types.ts';
import { detail, runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { scrapeMetrics } from './helpers/metrics.ts';
import { metricsUrlOf, spawnWorker, type Spawned } from './helpers/process.ts';
import { terminate, until } from './helpers/terminate-kit.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const DATE = '2026-07-08';
const SOURCE = 'orphan-confirm';
const REFERENCE = `fetch-records:${SOURCE}:${DATE}:submit-summary:r1`;
/** The confirm is held far longer than the test needs to terminate it. */
const HOLD_MS = 60_000;
const WAIT_MS = 90_000;
const GAUGE = 'durable_fetch_orphaned_actions';

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: Spawned;
let env: Record<string, string>;

before(async () => {
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => 30 }),
    testClient(),
  ]);
  env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: `test-orphans-${randomUUID()}`,
  };
  worker = spawnWorker({
    ...env,
    DURABLE_FETCH_LEASE_TTL_MS: '2000',
    // No sweep: what a terminated run leaves behind stays until someone settles it.
    DURABLE_FETCH_SWEEP_INTERVAL_MS: '0',
    DURABLE_FETCH_CLEANUP_INTERVAL_MS: '0',
    DURABLE_FETCH_METRICS_SAMPLE_MS: '500',
    HTTP_RESPONSE_TIMEOUT_MS: String(HOLD_MS + 10_000),
    LOG_LEVEL: 'warn',
  });
  await worker.waitFor(/worker polling task queue/, 60_000);
});
after(async () => {
  await worker?.stop('SIGKILL', 5_000);
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

interface StatusJson {
  healthy: boolean;
  problems: string[];
  orphans: { count: number; runs: { fetchRunId: string; status: string; states: string[] }[] };
}

async function statusJson(): Promise<StatusJson> {
  const r = await runCli(['status', '--json'], env);
  assert.equal(r.code, 0, detail(r));
  return JSON.parse(r.stdout) as StatusJson;
}

const wait = <T>(check: () => Promise<T | undefined>, what: string) =>
  until(check, () => `${what}:\n${worker.output().slice(-3000)}`, WAIT_MS);

const effects = (action: 'submit' | 'void') =>
  partner.ledger.entries({ action, reference: REFERENCE }).filter((e) => e.effect).length;

describe('orphaned actions', () => {
  it('orphaned-actions: a run terminated in its confirm call is counted in status, --check and the metrics until reconcile --stuck settles it; the submission is voided once', async () => {
    await createSource(db.prisma, SOURCE, partner.url, { submitSummary: true, submitMaxProcessingMs: 2_000 });
    const metricsUrl = await metricsUrlOf(worker);
    const fault = partner.faults.add({
      route: 'submissions',
      action: 'confirm',
      reference: REFERENCE,
      kind: 'delay',
      delayMs: HOLD_MS,
    });
    const started = await startFetch(
      { temporal: client, prisma: db.prisma, taskQueue: env.DURABLE_FETCH_TASK_QUEUE ?? '' },
      { sourceId: SOURCE, date: DATE, requestedBy: 'test' },
    );
    await wait(
      () => Promise.resolve(partner.faults.list().some((f) => f.id === fault) ? undefined : true),
      'the partner to hold the confirm',
    );
    const t = await terminate(started.workflowId, 'operator: the confirm hangs (test)');
    assert.equal(t.ok, true, t.said);
    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: SOURCE } });

    // Once its lease has run out, the terminated run's confirmed submission has no live owner.
    const seen = await wait(async () => {
      const s = await statusJson();
      return s.orphans.count > 0 ? s : undefined;
    }, 'status to count the orphaned action');
    assert.equal(seen.orphans.count, 1);
    assert.deepEqual(
      seen.orphans.runs.map((r) => [r.fetchRunId, r.status, r.states]),
      [[run.id, 'running', ['confirmed']]],
    );
    assert.ok(
      seen.problems.includes(
        '1 downstream action unsettled with no live run (durable-fetch reconcile --stuck)',
      ),
      seen.problems.join('\n'),
    );
    const check = await runCli(['status', '--check'], env);
    assert.equal(check.code, 1, detail(check));
    assert.match(check.stdout, /^ {2}! 1 downstream action unsettled with no live run/m);
    assert.match(check.stdout, /^downstream actions unsettled with no live run: 1$/m);
    assert.match(check.stdout, new RegExp(`${SOURCE}/${DATE} +${run.id} +running +1 \\(confirmed\\)`));
    await wait(
      async () => ((await scrapeMetrics(metricsUrl)).get(GAUGE) === 1 ? true : undefined),
      `${GAUGE} 1`,
    );
    assert.deepEqual(
      partner.submissions.byReference(REFERENCE).map((x) => x.status),
      ['submitted'],
      'nothing has settled it meanwhile',
    );

    const swept = await runCli(['reconcile', '--stuck'], env);
    assert.equal(swept.code, 0, detail(swept));
    const compensation = client.workflow.getHandle<() => Promise<CompensateRunResult>>(
      compensationWorkflowIdFor({ jobType: 'fetch-records', sourceId: SOURCE, businessDate: DATE }, 1),
    );
    assert.deepEqual(await compensation.result(), {
      compensated: 1,
      notApplied: 0,
      needsManual: 0,
      runStatus: 'compensated',
    });
    const after = await statusJson();
    assert.deepEqual([after.orphans.count, after.orphans.runs], [0, []]);
    assert.ok(!after.problems.some((p) => p.includes('no live run')), after.problems.join('\n'));
    await wait(
      async () => ((await scrapeMetrics(metricsUrl)).get(GAUGE) === 0 ? true : undefined),
      `${GAUGE} back at 0`,
    );
    assert.deepEqual(
      partner.submissions.byReference(REFERENCE).map((x) => x.status),
      ['voided'],
    );
    assert.deepEqual([effects('submit'), effects('void')], [1, 1], 'one submission, voided once');
    const letters = await db.prisma.deadLetter.findMany({ where: { fetchRunId: run.id } });
    assert.deepEqual(
      letters.map((l) => l.errorCode),
      ['WORKFLOW_TERMINATED'],
    );
  });
});
