// Deploying a new version while runs are open (R9 "on deploy"; docs/versioning.md): a real
// `durable-fetch worker` of build A holds one run in a page fetch and another in its downstream
// confirm call; A stops (SIGTERM, or SIGKILL), and a worker of build B, whose workflow code issues
// one more command behind patched(), takes both runs over. They finish `succeeded` on B with
// every record stored once and one confirmed submission in the partner's ledger, Temporal's
// history names the build that ran each workflow task (A, then B), and the same change without
// patched() is what the replay gate rejects: that history no longer replays.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startFetch } from '../client/start-fetch.ts';
import type { PollingBuild } from '../client/status-builds.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { DEPLOYMENT_NAME } from '../worker/build-version.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { spawnWorker, type Spawned, within } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';
import {
  buildsOf,
  buildWorkflowVariant,
  replayWith,
  tookPatchedPath,
  type WorkflowVariant,
} from './helpers/workflow-variant.ts';

const DATE = '2026-07-07';
const RECORDS = 120;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let guarded: WorkflowVariant;
let unguarded: WorkflowVariant;
const workers: Spawned[] = [];

before(async () => {
  // Warnings only: the replay workers of this process are otherwise chatty.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => RECORDS }),
    testClient(),
  ]);
  guarded = await buildWorkflowVariant({ guarded: true });
  unguarded = await buildWorkflowVariant({ guarded: false });
});
after(async () => {
  for (const w of workers) await w.stop('SIGKILL', 5_000);
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
  await guarded?.remove();
  await unguarded?.remove();
});

const referenceOf = (sourceId: string) => `fetch-records:${sourceId}:${DATE}:submit-summary:r1`;

/** A `durable-fetch worker` of build `buildId` on `taskQueue`, polling once it resolves. */
async function workerOf(taskQueue: string, buildId: string, bundlePath?: string): Promise<Spawned> {
  const worker = spawnWorker({
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: taskQueue,
    DURABLE_FETCH_BUILD_ID: buildId,
    // A short grace: the held partner calls are cancelled, to be retried by the next build.
    DURABLE_FETCH_SHUTDOWN_GRACE_MS: '500',
    PARTNER_PAGE_LIMIT: '50',
    LOG_LEVEL: 'warn',
    ...(bundlePath ? { DURABLE_FETCH_WORKFLOW_BUNDLE: bundlePath } : {}),
  });
  workers.push(worker);
  const escaped = `as ${DEPLOYMENT_NAME} build ${buildId} `.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // Starting costs a worker seconds of CPU (tsx, the bundle): on a busy 2-core machine, a minute.
  await worker.waitFor(new RegExp(escaped), 120_000);
  return worker;
}

async function start(taskQueue: string, sourceId: string): Promise<string> {
  const started = await startFetch(
    { temporal: client, prisma: db.prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') },
    { sourceId, date: DATE, requestedBy: 'test' },
  );
  return started.workflowId;
}

async function historyOf(workflowId: string) {
  return client.workflow.getHandle(workflowId).fetchHistory();
}

/** The workflow ids a visibility query lists, sorted. */
async function listed(query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const w of client.workflow.list({ query })) ids.push(w.workflowId);
  return ids.sort();
}

function submitEffects(sourceId: string): number {
  return partner.ledger
    .entries({ action: 'submit' })
    .filter((e) => e.effect && e.reference?.startsWith(`fetch-records:${sourceId}:`)).length;
}

async function deployWhileOpen(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  const tag = signal.toLowerCase();
  const taskQueue = `test-deploy-${tag}-${randomUUID()}`;
  const [pageSource, confirmSource] = [`deploy-${tag}-page`, `deploy-${tag}-confirm`];
  const [buildA, buildB] = [`0.1.0+a-${tag}`, `0.2.0+b-${tag}`];
  // Killed, a worker leaves in the history only the workflow tasks it completed: a run whose page
  // fetches are local (the default) is one workflow task from its claim to the held fetch, which A
  // never completes, so that run fetches as activity tasks here (a worker killed during a local
  // fetch: local-fetch.e2e.test.ts). Stopped, A completes that task as it stops the fetch.
  await createSource(db.prisma, pageSource, partner.url, {
    pageSize: 50,
    ...(signal === 'SIGKILL' ? { localFetch: false } : {}),
  });
  await createSource(db.prisma, confirmSource, partner.url, {
    pageSize: 50,
    submitSummary: true,
    submitMaxProcessingMs: 2_000,
  });
  // The second page, and the confirm call, are held at the partner long enough to stop A.
  partner.faults.add({ sourceId: pageSource, kind: 'delay', delayMs: 20_000, afterRequests: 1 });
  partner.faults.add({
    route: 'submissions',
    action: 'confirm',
    reference: referenceOf(confirmSource),
    kind: 'delay',
    delayMs: 20_000,
  });

  const a = await workerOf(taskQueue, buildA);
  const pageRun = await start(taskQueue, pageSource);
  const confirmRun = await start(taskQueue, confirmSource);
  await waitFor(
    () =>
      partner.faults
        .list()
        .every((f) => f.sourceId !== pageSource && f.reference !== referenceOf(confirmSource)),
    'the partner holding the second page and the confirm call of build A',
    60_000,
  );
  assert.equal(await a.stop(signal, 30_000), signal === 'SIGTERM' ? 0 : null, a.output());

  const b = await workerOf(taskQueue, buildB, guarded.bundlePath);
  for (const id of [pageRun, confirmRun]) {
    const result = client.workflow.getHandle(id).result() as Promise<{ status: string }>;
    assert.equal((await within(result, 180_000, () => b.output())).status, 'succeeded', id);
  }

  // `status` names the build that polls the queue now (a stopped one stays listed a while).
  const status = await runCli(['status', '--json', '--task-queue', taskQueue], {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
  });
  const { builds } = JSON.parse(status.stdout) as { builds: PollingBuild[] };
  console.log(`status builds after the ${signal} deploy: ${JSON.stringify(builds)}`);
  assert.deepEqual(
    builds.slice(0, 1).map((x) => [x.deploymentName, x.buildId, x.pollers]),
    [[DEPLOYMENT_NAME, buildB, 1]],
    status.stdout + status.stderr,
  );

  // The judge: the database rows and the partner's ledger.
  for (const sourceId of [pageSource, confirmSource]) {
    const run = await db.prisma.fetchRun.findFirstOrThrow({
      where: { sourceId },
      include: { deadLetters: true },
    });
    assert.deepEqual([run.status, run.recordsStored, run.deadLetters.length], ['succeeded', RECORDS, 0]);
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), RECORDS, 'each record once');
  }
  assert.equal(submitEffects(pageSource), 0);
  assert.equal(submitEffects(confirmSource), 1, 'one submission, never a second');
  const live = partner.submissions
    .list()
    .filter((s) => s.reference.startsWith(`fetch-records:${confirmSource}:`) && s.status !== 'voided');
  assert.deepEqual(
    live.map((s) => [s.reference, s.status]),
    [[referenceOf(confirmSource), 'confirmed']],
  );
  const { downstreamActions } = await db.prisma.fetchRun.findFirstOrThrow({
    where: { sourceId: confirmSource },
    include: { downstreamActions: true },
  });
  assert.deepEqual(
    downstreamActions.map((x) => [x.reference, x.state, x.partnerState]),
    [[referenceOf(confirmSource), 'confirmed', 'confirmed']],
  );

  // What Temporal recorded: which build completed each workflow task.
  const pageHistory = await historyOf(pageRun);
  const confirmHistory = await historyOf(confirmRun);
  const expectedBuilds = [`${DEPLOYMENT_NAME}/${buildA}`, `${DEPLOYMENT_NAME}/${buildB}`];
  assert.deepEqual(buildsOf(pageHistory), expectedBuilds, 'the page run: build A, then build B');
  assert.deepEqual(buildsOf(confirmHistory), expectedBuilds, 'the confirm run: build A, then build B');
  const described = await client.workflow.getHandle(confirmRun).describe();
  assert.equal(described.raw.workflowExecutionInfo?.mostRecentWorkerVersionStamp?.buildId, buildB);
  assert.equal(described.raw.workflowExecutionInfo?.workerDeploymentName, DEPLOYMENT_NAME);
  // The Web UI's run list (and `temporal workflow list`) finds the runs each build worked on.
  for (const build of [buildA, buildB]) {
    const query = `TaskQueue = '${taskQueue}' AND BuildIds = 'unversioned:${build}'`;
    const expected = JSON.stringify([pageRun, confirmRun].sort());
    await waitFor(async () => JSON.stringify(await listed(query)) === expected, query, 30_000);
  }
  // B's new command only where the run had not passed it under A.
  assert.equal(tookPatchedPath(pageHistory), true, 'the page run reached the change on B: new path');
  assert.equal(tookPatchedPath(confirmHistory), false, 'the confirm run had passed it on A: old path');

  // The replay gate's verdicts on these histories.
  const current = await readFile(requiredEnv('DF_TEST_WORKFLOW_BUNDLE'), 'utf8');
  assert.equal(await replayWith(guarded.code, confirmRun, confirmHistory), 'replayed');
  assert.equal(await replayWith(guarded.code, pageRun, pageHistory), 'replayed');
  assert.match(
    await replayWith(unguarded.code, confirmRun, confirmHistory),
    /^DeterminismViolationError: \[TMPRL1100\] Nondeterminism error/,
    'the change without patched() breaks a run that had passed it',
  );
  assert.match(
    await replayWith(current, pageRun, pageHistory),
    /^DeterminismViolationError: .*Non-deprecated patch marker encountered for change test-only-deploy-variant-extra-timer/,
    'rolled back to A, a run that took the patched path no longer replays',
  );
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  assert.ok(value, `test/run.ts sets ${name}`);
  return value;
}

describe('deploying a new version while runs are open', { concurrency: true, timeout: 600_000 }, () => {
  it('build A stopped with SIGTERM mid page fetch and mid confirm: both runs finish on build B, no duplicate, history shows A then B', () =>
    deployWhileOpen('SIGTERM'));
  it('build A killed (SIGKILL) mid page fetch and mid confirm: both runs finish on build B, no duplicate, history shows A then B', () =>
    deployWhileOpen('SIGKILL'));
});
