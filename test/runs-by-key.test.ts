// A run named `<source>/<date>` is the run of the source's own job, whichever job that is: the
// library's getRun and cancelRun, `runs show`, `runs cancel` and `reconcile` find the run of an
// `exchange-rates` source and of an `http` source (not only of `fetch-records`), against real
// PostgreSQL and the shared Temporal server. An unknown source is named in one line.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { cancelRun, getRun } from '../client/runs.ts';
import { startFetch, type DurableFetchContext } from '../client/start-fetch.ts';
import { detail, fieldsOf, ok, runCli } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { insertRun } from './helpers/job-rows.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const DATE = '2026-03-14';
const RATES = 'rbk-rates';
const HTTP = 'rbk-http';

let db: TestDatabase;
let temporal: Client;
let ctx: DurableFetchContext;
let env: Record<string, string>;
/** The workflow of the exchange-rates run: started for real, on a task queue no worker polls. */
let ratesWorkflowId: string;

before(async () => {
  db = await useTestDatabase();
  temporal = await testClient();
  const taskQueue = `rbk-${randomUUID()}`;
  ctx = { temporal, prisma: db.prisma, taskQueue, now: () => new Date('2026-03-20T12:00:00Z') };
  env = { DATABASE_URL: db.url, TEMPORAL_ADDRESS: temporalAddress(), DURABLE_FETCH_TASK_QUEUE: taskQueue };
  await createSource(db.prisma, RATES, 'http://127.0.0.1:9', { jobType: 'exchange-rates' });
  await createSource(db.prisma, HTTP, 'http://127.0.0.1:9', { jobType: 'http' });
  // A fetch-records source with a run of the same date: a lookup must not wander to it.
  await createSource(db.prisma, 'rbk-records', 'http://127.0.0.1:9');
  const started = await startFetch(ctx, { sourceId: RATES, date: DATE, requestedBy: 'test' });
  ratesWorkflowId = started.workflowId;
  assert.equal(ratesWorkflowId, `fetch/exchange-rates/${RATES}/${DATE}`);
  // The row the run's claim writes (no worker polls the queue, so the test writes it).
  await insertRun(db.prisma, { jobType: 'exchange-rates', sourceId: RATES, date: DATE, status: 'running' });
  await insertRun(db.prisma, { jobType: 'http', sourceId: HTTP, date: DATE, status: 'succeeded' });
  await insertRun(db.prisma, { jobType: 'fetch-records', sourceId: 'rbk-records', date: DATE });
});

after(async () => {
  if (ratesWorkflowId)
    await temporal.workflow
      .getHandle(ratesWorkflowId)
      .terminate('test over')
      .catch(() => {});
  await temporal?.connection.close();
  await db?.drop();
});

void describe('runs by <source>/<date>, for every job', () => {
  void it('getRun finds the run of an exchange-rates and of an http source by <source>/<date>', async () => {
    const rates = await getRun(ctx, `${RATES}/${DATE}`);
    assert.equal(rates?.workflowId, ratesWorkflowId);
    const http = await getRun(ctx, `${HTTP}/${DATE}`);
    assert.equal(http?.workflowId, `fetch/http/${HTTP}/${DATE}`);
    const records = await getRun(ctx, `rbk-records/${DATE}`);
    assert.equal(records?.jobType, 'fetch-records');
    assert.equal(await getRun(ctx, `${RATES}/2026-03-15`), undefined, 'a date without a run');
  });

  void it('runs show <source>/<date> prints the run of the source’s job', async () => {
    const fields = fieldsOf(ok(await runCliInProcess(['runs', 'show', `${HTTP}/${DATE}`], env)));
    assert.equal(fields.get('job'), 'http');
    assert.equal(fields.get('workflow'), `fetch/http/${HTTP}/${DATE}`);
    const rates = fieldsOf(ok(await runCliInProcess(['runs', 'show', `${RATES}/${DATE}`], env)));
    assert.equal(rates.get('job'), 'exchange-rates');
    assert.equal(rates.get('status'), 'running');
  });

  void it('reconcile <source>/<date> selects the run of the source’s job', async () => {
    const result = await runCliInProcess(['reconcile', `${HTTP}/${DATE}`, '--json'], env);
    const report = JSON.parse(result.stdout) as { runs: { jobType: string; sourceId: string }[] };
    assert.deepEqual(
      report.runs.map((r) => [r.jobType, r.sourceId]),
      [['http', HTTP]],
      detail(result),
    );
  });

  void it('runs cancel <source>/<date> and cancelRun cancel the exchange-rates run in Temporal', async () => {
    const out = ok(await runCliInProcess(['runs', 'cancel', `${RATES}/${DATE}`], env));
    assert.equal(out.trim(), `cancellation requested for ${ratesWorkflowId}`);
    const history = await temporal.workflow.getHandle(ratesWorkflowId).fetchHistory();
    const requested = (history.events ?? []).filter((e) => e.workflowExecutionCancelRequestedEventAttributes);
    assert.equal(requested.length, 1, 'the workflow got the cancel request');
    const again = await cancelRun(ctx, `${RATES}/${DATE}`);
    assert.equal(again?.run.workflowId, ratesWorkflowId);
    assert.equal(again?.requested, true);
  });

  void it('an unknown source is named in one line (runs show, runs cancel, reconcile)', async () => {
    for (const args of [
      ['runs', 'show', `rbk-nope/${DATE}`],
      ['runs', 'cancel', `rbk-nope/${DATE}`],
      ['reconcile', `rbk-nope/${DATE}`],
    ]) {
      const result = await runCliInProcess(args, env);
      assert.equal(result.code, 1, detail(result));
      assert.equal(result.stdout, '', detail(result));
      assert.match(
        result.stderr.trim(),
        /^durable-fetch: no run 'rbk-nope\/2026-03-14': no source 'rbk-nope'$/,
      );
    }
    await assert.rejects(getRun(ctx, `rbk-nope/${DATE}`), /no source 'rbk-nope'/);
  });

  void it('runs show of the child process finds the exchange-rates run too', async () => {
    const fields = fieldsOf(ok(await runCli(['runs', 'show', `${RATES}/${DATE}`], env)));
    assert.equal(fields.get('workflow'), ratesWorkflowId);
  });
});
