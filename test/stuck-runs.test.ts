// The stuck-run sweep end to end: a real `durable-fetch worker` child process (short lease, short
// sweep interval) holds a run mid-call at the demo partner; the run's workflow is then terminated
// through Temporal, as the Web UI's Terminate does, so it never records its end. The sweep must
// settle the row the normal way (dead letter, audit entry, compensation at the partner), leave
// live runs alone, and `status` / `reconcile --stuck` must show and settle what is left.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { defaultActor } from '../client/audit.ts';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { compensationWorkflowIdFor } from '../contract/business-key.ts';
import type { CompensateRunResult } from '../contract/types.ts';
import { detail, runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { scrapeMetrics } from './helpers/metrics.ts';
import { metricsUrlOf, spawnWorker, type Spawned } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const DATE = '2026-08-14';
/** Long enough to hold a call for the whole test; the partner cancels it when it closes. */
const HOLD_MS = 600_000;
/** Leases run out 2 s after their last renewal, so a held run becomes a candidate quickly. */
const LEASE_TTL_MS = 2_000;
/** Generous bound on anything that waits for the sweep: worker start + lease + a few passes. */
const WAIT_MS = 90_000;

let client: Client;
let partner: PartnerServer;

before(async () => {
  client = await testClient();
  partner = await startPartner({ port: 0, recordCount: () => 30 });
});
after(async () => {
  await client?.connection.close();
  await partner?.close();
});

interface Scenario {
  db: TestDatabase;
  worker: Spawned;
  taskQueue: string;
  env: Record<string, string>;
}

/** Runs `body` with its own database and a `durable-fetch worker` sweeping every `sweepMs`. */
async function withWorker(
  sweepMs: number,
  body: (s: Scenario) => Promise<void>,
  extraEnv: Record<string, string> = {},
): Promise<void> {
  const db = await useTestDatabase();
  const taskQueue = `test-stuck-${randomUUID()}`;
  const env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: taskQueue,
  };
  const worker = spawnWorker({
    ...env,
    DURABLE_FETCH_LEASE_TTL_MS: String(LEASE_TTL_MS),
    DURABLE_FETCH_SWEEP_INTERVAL_MS: String(sweepMs),
    DURABLE_FETCH_CLEANUP_INTERVAL_MS: '0',
    DURABLE_FETCH_SHUTDOWN_GRACE_MS: '1000',
    // The partner holds calls far longer than the default 15 s response timeout.
    HTTP_RESPONSE_TIMEOUT_MS: String(HOLD_MS),
    LOG_LEVEL: 'warn',
    ...extraEnv,
  });
  try {
    await worker.waitFor(/worker polling task queue/, 60_000);
    await body({ db, worker, taskQueue, env });
  } finally {
    await worker.stop('SIGKILL', 5_000);
    await db.drop();
  }
}

/** Polls `check` until it returns a value other than undefined; fails after `ms` with `what`. */
async function until<T>(check: () => Promise<T | undefined>, what: () => string, ms = WAIT_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what()}`);
    await sleep(200);
  }
}

/** Registers `sourceId` with its page requests held by the partner; returns the fault's id. */
async function heldSource(s: Scenario, sourceId: string): Promise<string> {
  await createSource(s.db.prisma, sourceId, partner.url);
  return partner.faults.add({ sourceId, kind: 'delay', delayMs: HOLD_MS, times: 100 });
}

/** Starts the run of `sourceId` and waits until the partner holds the call `faultId` hits. */
async function startHeld(s: Scenario, sourceId: string, faultId: string) {
  const started = await startFetch(
    {
      temporal: client,
      prisma: s.db.prisma,
      taskQueue: s.taskQueue,
      now: () => new Date('2026-11-29T12:00:00Z'),
    },
    { sourceId, date: DATE, requestedBy: 'test' },
  );
  await until(
    () =>
      Promise.resolve(
        (partner.faults.list().find((f) => f.id === faultId)?.seen ?? 0) > 0 ? true : undefined,
      ),
    () => `the partner to hold the call of ${sourceId}:\n${s.worker.output()}`,
  );
  const run = await s.db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
  assert.equal(run.status, 'running');
  return { handle: started.handle, run };
}

/** The run's row once its status is no longer `running`. */
function settledRun(s: Scenario, sourceId: string) {
  return until(
    async () => {
      const run = await s.db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      return run.status === 'running' ? undefined : run;
    },
    () => `the sweep to settle ${sourceId}:\n${s.worker.output()}`,
  );
}

describe('stuck runs', () => {
  it('stuck-runs: a run terminated mid-fetch is dead-lettered by the sweep with the reason, audited once', async () => {
    await withWorker(1_000, async (s) => {
      const fault = await heldSource(s, 'stuck-term');
      const metricsUrl = await metricsUrlOf(s.worker);
      const { handle, run } = await startHeld(s, 'stuck-term', fault);

      await handle.terminate('operator: the partner hangs, stopping this run');
      const settled = await settledRun(s, 'stuck-term');
      assert.equal(settled.status, 'dead_lettered');
      assert.equal(settled.errorClass, 'Internal');
      assert.match(settled.errorMessage ?? '', /workflow terminated by .+: operator: the partner hangs/);
      const letters = await s.db.prisma.deadLetter.findMany({ where: { fetchRunId: run.id } });
      assert.equal(letters.length, 1);
      assert.deepEqual(
        [letters[0]?.errorType, letters[0]?.errorCode, letters[0]?.workflowId],
        ['Internal', 'WORKFLOW_TERMINATED', run.workflowId],
      );
      assert.match(letters[0]?.errorMessage ?? '', /operator: the partner hangs, stopping this run/);
      const audit = await s.db.prisma.auditEntry.findMany({ where: { targetId: run.id } });
      assert.deepEqual(
        audit.map((a) => [a.actor, a.action, a.targetType]),
        [['system:sweep', 'run.settle_stuck', 'fetch_run']],
      );
      assert.match(audit[0]?.reason ?? '', /workflow terminated/);
      assert.equal((audit[0]?.details as { found?: string }).found, 'terminated');
      const m = await until(
        async () => {
          const values = await scrapeMetrics(metricsUrl);
          return values.get('durable_fetch_runs_stuck_settled_total{outcome="terminated"}') === 1
            ? values
            : undefined;
        },
        () => 'the settled counter',
      );
      assert.equal(m.get('durable_fetch_runs_stuck'), 0, 'nothing left stuck');

      // A second sweep (the CLI's, and the worker's next passes) changes nothing.
      const again = await runCli(['reconcile', '--stuck'], s.env);
      assert.equal(again.code, 0, detail(again));
      assert.match(again.stdout, /^0 stuck runs \(0 settled\), 0 left stuck/m);
      await sleep(3_000);
      const after = await s.db.prisma.fetchRun.findUniqueOrThrow({ where: { id: run.id } });
      assert.deepEqual(after.updatedAt, settled.updatedAt);
      assert.equal(await s.db.prisma.deadLetter.count({ where: { fetchRunId: run.id } }), 1);
      assert.equal(await s.db.prisma.auditEntry.count({ where: { targetId: run.id } }), 1);
    });
  });

  it('stuck-runs: a terminated run that made its downstream submission is compensated: voided at the partner, run compensated', async () => {
    await withWorker(1_000, async (s) => {
      await createSource(s.db.prisma, 'stuck-comp', partner.url);
      await s.db.prisma.source.update({ where: { id: 'stuck-comp' }, data: { submitSummary: true } });
      const reference = `fetch-records:stuck-comp:${DATE}:submit-summary:r1`;
      const fault = partner.faults.add({
        route: 'submissions',
        action: 'confirm',
        reference,
        kind: 'delay',
        delayMs: HOLD_MS,
        times: 100,
      });
      const { handle, run } = await startHeld(s, 'stuck-comp', fault);
      assert.deepEqual(
        partner.submissions.byReference(reference).map((x) => x.status),
        ['submitted'],
        'the submission exists at the partner, its confirm held',
      );

      await handle.terminate('operator: stop the held confirm');
      const settled = await settledRun(s, 'stuck-comp');
      assert.ok(['dead_lettered', 'compensated'].includes(settled.status), settled.status);
      const compensation = client.workflow.getHandle<() => Promise<CompensateRunResult>>(
        compensationWorkflowIdFor(
          { jobType: 'fetch-records', sourceId: 'stuck-comp', businessDate: DATE },
          1,
        ),
      );
      const result = await until(
        () => compensation.result().catch(() => undefined),
        () => `the compensation started by the sweep:\n${s.worker.output()}`,
      );
      assert.deepEqual(result, { compensated: 1, notApplied: 0, needsManual: 0, runStatus: 'compensated' });
      // The partner's store is the judge: nothing live under the reference.
      assert.deepEqual(
        partner.submissions.byReference(reference).map((x) => x.status),
        ['voided'],
      );
      const final = await s.db.prisma.fetchRun.findUniqueOrThrow({ where: { id: run.id } });
      assert.equal(final.status, 'compensated');
      const action = await s.db.prisma.downstreamAction.findFirstOrThrow({ where: { fetchRunId: run.id } });
      assert.equal(action.state, 'compensated');
      const letter = await s.db.prisma.deadLetter.findFirstOrThrow({ where: { fetchRunId: run.id } });
      assert.equal(letter.errorCode, 'WORKFLOW_TERMINATED');
    });
  });

  it('stuck-runs: with the sweep off, status --check names the stuck run; reconcile --stuck settles it; status no longer lists it', async () => {
    await withWorker(0, async (s) => {
      const fault = await heldSource(s, 'stuck-off');
      const { handle, run } = await startHeld(s, 'stuck-off', fault);
      await handle.terminate('operator: testing the manual sweep');

      // Listed once its lease has run out.
      const check = await until(
        async () => {
          const r = await runCli(['status', '--check'], s.env);
          return r.stdout.includes(run.id) ? r : undefined;
        },
        () => 'status to list the stuck run',
      );
      assert.equal(check.code, 1, detail(check));
      assert.match(
        check.stdout,
        /1 run stuck: their workflow closed while the row says running \(durable-fetch reconcile --stuck\)/,
      );
      assert.match(check.stdout, new RegExp(`stuck-off/${DATE} +${run.id} +${run.workflowId}`));
      await sleep(3_000);
      const untouched = await s.db.prisma.fetchRun.findUniqueOrThrow({ where: { id: run.id } });
      assert.equal(untouched.status, 'running', 'no worker sweeps with the interval at 0');

      const swept = await runCli(['reconcile', '--stuck'], s.env);
      assert.equal(swept.code, 0, detail(swept));
      assert.match(
        swept.stdout,
        new RegExp(
          `^✓ stuck-off/${DATE} \\(run ${run.id}, .+\\): workflow terminated .+ → dead_lettered \\(dead letter `,
          'm',
        ),
      );
      assert.match(swept.stdout, /^1 stuck run \(1 settled\), 0 left stuck/m);
      const settled = await s.db.prisma.fetchRun.findUniqueOrThrow({ where: { id: run.id } });
      assert.equal(settled.status, 'dead_lettered');
      const audit = await s.db.prisma.auditEntry.findFirstOrThrow({ where: { targetId: run.id } });
      assert.equal(audit.actor, defaultActor({}), 'the operator who ran the command');

      const status = await runCli(['status', '--json'], s.env);
      assert.equal(status.code, 0, detail(status));
      const parsed = JSON.parse(status.stdout) as { stuck: { runs: unknown[] }; problems: string[] };
      assert.deepEqual(parsed.stuck.runs, []);
      assert.ok(!parsed.problems.some((p) => /runs? stuck:/.test(p)), parsed.problems.join('\n'));
    });
  });

  it('stuck-runs: a run whose workflow is still running is never touched, however long ago its lease ran out', async () => {
    // Debug logs show each sweep pass and what it checked.
    await withWorker(
      1_000,
      async (s) => {
        const fault = await heldSource(s, 'stuck-live');
        const { handle, run } = await startHeld(s, 'stuck-live', fault);
        try {
          // Two passes that looked the run up (its lease ran out) and settled nothing.
          const pass = /"checked":1,"settled":0,"leftStuck":0,"msg":"stuck-run sweep done"/g;
          await until(
            () => Promise.resolve((s.worker.output().match(pass)?.length ?? 0) >= 2 ? true : undefined),
            () => `two sweep passes over the live run:\n${s.worker.output().slice(-3000)}`,
          );
          const manual = await runCli(['reconcile', '--stuck'], s.env);
          assert.equal(manual.code, 0, detail(manual));
          assert.match(
            manual.stdout,
            /^0 stuck runs \(0 settled\), 0 left stuck; 1 run past their lease checked/m,
          );

          const now = await s.db.prisma.fetchRun.findUniqueOrThrow({ where: { id: run.id } });
          assert.equal(now.status, 'running');
          assert.equal(now.leaseToken, run.leaseToken);
          assert.ok(now.leaseUntil && now.leaseUntil < new Date(), 'its lease has run out');
          assert.equal(await s.db.prisma.deadLetter.count(), 0);
          assert.equal(await s.db.prisma.auditEntry.count(), 0);
          assert.equal((await handle.describe()).status.name, 'RUNNING');
        } finally {
          await handle.terminate('test over');
        }
      },
      { LOG_LEVEL: 'debug' },
    );
  });
});
