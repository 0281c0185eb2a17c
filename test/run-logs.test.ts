// Structured logs (R10/R11): every log line about a run carries its workflow id, run id,
// business key and correlation id — the activities' own lines (deps.log), the Temporal SDK's
// activity and workflow lines routed into the same pino logger, and the workflow's `log` lines —
// and a secret never appears: neither the partner token the run really uses (resolved by the
// worker's `secret` function and sent as `Authorization: Bearer …`) nor the same token planted in
// logged objects under the keys the logger's own redaction config censors.
//
// Like dead-letter-redaction.test.ts, this file installs the Temporal runtime logger itself (one
// per process), so it builds its worker directly instead of with helpers/temporal.ts `testWorker`;
// it lets the worker bundle the workflows itself, as production does (with the interceptors).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { createLogger, REDACTED } from '../runtime/logger.ts';
import { installRuntimeLogger } from '../worker/runtime-logger.ts';
import { buildWorker } from '../worker/worker.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const TOKEN = 'tok-LOGS-SECRET-42';
const SECRET_REF = 'DF_SECRET_LOGS_PARTNER_TOKEN';
const SOURCE = 'logs-alpha';
const DATE = '2026-08-21';
const WORKFLOW_ID = `fetch/fetch-records/${SOURCE}/${DATE}`;
const BUSINESS_KEY = `fetch-records:${SOURCE}:${DATE}`;
const CORRELATION_ID = 'corr-logs-1';

type Line = Record<string, unknown>;

/** Every line the worker logged: its own logger (the production one) and the SDK's, routed in. */
const output: string[] = [];
const log = createLogger(
  'debug',
  { process: 'run-logs-test' },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      output.push(chunk.toString('utf8'));
      done();
    },
  }),
);
// Before this process opens any native connection to Temporal (only one runtime per process).
installRuntimeLogger(log, 'DEBUG');

const lines = (): Line[] =>
  output
    .join('')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Line);

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let runId: string;
let fetchRunId: string;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => 120 });
  client = await testClient();
});

after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/** One run of `sourceId` on a worker of its own, built as production builds it, with `deps`. */
async function runOnWorker(sourceId: string, deps: ReturnType<typeof testDeps>, correlationId?: string) {
  const taskQueue = `test-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  try {
    const worker = await buildWorker({ connection, namespace: 'default', taskQueue, deps });
    return await worker.runUntil(async () => {
      const started = await startFetch(
        { temporal: client, prisma: db.prisma, taskQueue },
        { sourceId, date: DATE, correlationId, requestedBy: 'test' },
      );
      return { runId: started.runId, workflowId: started.workflowId, result: await started.handle.result() };
    });
  } finally {
    await connection.close();
  }
}

describe('run logs', { timeout: 300_000 }, () => {
  before(async () => {
    await createSource(db.prisma, SOURCE, partner.url, { pageSize: 50, credentialsRef: SECRET_REF });
    const secret = (ref: string) => (ref === SECRET_REF ? TOKEN : undefined);
    const run = await runOnWorker(SOURCE, testDeps(db.prisma, { log, secret }), CORRELATION_ID);
    assert.equal(run.workflowId, WORKFLOW_ID);
    runId = run.runId;
    const { result } = run;
    assert.equal(result.status, 'succeeded');
    assert.ok(result.status === 'succeeded' && result.pages === 3 && result.records === 120);
    fetchRunId = result.fetchRunId;
  });

  it('the token was really in play: every partner call carried the Authorization header', () => {
    const entries = partner.ledger.entries({ sourceId: SOURCE });
    assert.equal(entries.length, 3, 'one call per page');
    for (const e of entries) assert.equal(e.auth, true);
  });

  it('every line about the run carries its workflow id, run id, business key and correlation id', () => {
    const all = lines();
    // A line is about the run when it names it by any of its ids.
    const about = all.filter(
      (l) =>
        l.workflowId === WORKFLOW_ID ||
        l.runId === runId ||
        l.workflowRunId === runId ||
        l.fetchRunId === fetchRunId ||
        l.correlationId === CORRELATION_ID,
    );
    assert.ok(about.length >= 10, `lines about the run: ${about.length}`);
    for (const l of about) {
      const line = JSON.stringify(l);
      assert.equal(l.workflowId, WORKFLOW_ID, line);
      assert.equal(l.runId ?? l.workflowRunId, runId, line);
      assert.equal(l.businessKey, BUSINESS_KEY, line);
      assert.equal(l.correlationId, CORRELATION_ID, line);
    }

    // The activities' own lines (deps.log, no `sdk` flag): bound to their execution.
    const claimed = about.find((l) => l.msg === 'run claimed' && l.sdk === undefined);
    assert.ok(claimed, 'the claimRun activity logged "run claimed" through deps.log');
    assert.equal(claimed.activity, 'claimRun');
    assert.equal(claimed.workflowRunId, runId);
    assert.equal(claimed.activityAttempt, 1);

    // The SDK's activity lines, "Activity started" included (logged before any interceptor runs).
    for (const activity of ['claimRun', 'fetchPage', 'storePage', 'completeRun']) {
      const sdk = about.filter((l) => l.sdk === true && l.activityType === activity);
      const messages = sdk.map((l) => l.msg);
      assert.ok(messages.includes('Activity started'), `${activity}: ${JSON.stringify(messages)}`);
      assert.ok(messages.includes('Activity completed'), `${activity}: ${JSON.stringify(messages)}`);
    }
    assert.equal(
      about.filter((l) => l.activityType === 'fetchPage' && l.msg === 'Activity started').length,
      3,
    );

    // The workflow sandbox's lines: the SDK's lifecycle lines and the workflow's own `log.info`.
    const workflow = about.filter((l) => l.sdk === true && l.runId === runId);
    const messages = workflow.map((l) => l.msg);
    assert.ok(messages.includes('Workflow started'), JSON.stringify(messages));
    assert.ok(messages.includes('Workflow completed'), JSON.stringify(messages));
    const succeeded = workflow.find((l) => l.msg === 'run succeeded');
    assert.ok(succeeded, JSON.stringify(messages));
    assert.deepEqual([succeeded.sdkComponent, succeeded.pages, succeeded.records], ['workflow', 3, 120]);
  });

  it('a secret planted in logged objects is censored by the logger, and the token appears nowhere', () => {
    log.info(
      {
        authorization: `Bearer ${TOKEN}`,
        token: TOKEN,
        apiKey: TOKEN,
        request: { headers: { 'x-api-key': TOKEN }, password: TOKEN, api_key: TOKEN },
        partner: { auth: { secret: TOKEN, cookie: `session=${TOKEN}` } },
        headers: { Authorization: `Bearer ${TOKEN}` },
      },
      'planted secrets',
    );
    const planted = lines().find((l) => l.msg === 'planted secrets');
    assert.ok(planted, 'the planted line was captured');
    assert.deepEqual(planted.authorization, REDACTED);
    assert.deepEqual(planted.token, REDACTED);
    assert.deepEqual(planted.request, {
      headers: { 'x-api-key': REDACTED },
      password: REDACTED,
      api_key: REDACTED,
    });
    assert.deepEqual(planted.partner, { auth: { secret: REDACTED, cookie: REDACTED } });

    const text = output.join('');
    assert.match(text, /"sdk":true/, 'the SDK log was captured');
    assert.ok(!text.includes(TOKEN), 'a log line holds the token');
  });
});

// sdk-core's own log reaches the same logger (not stderr as text), and its report of a workflow
// task that lasted over 5 s is an info line: a run's local steps, one after the other, are one
// long workflow task by design (worker/runtime-logger.ts).
describe('run logs: a long workflow task', { timeout: 300_000 }, () => {
  it("sdk-core's [TMPRL1104] is a JSON line at info, never a warning", async () => {
    const sourceId = 'logs-long';
    await createSource(db.prisma, sourceId, partner.url, { pageSize: 50 });
    // Page 2 is held 6 s: its first attempt times out (5 s, testDeps), the retry inside the worker
    // gets it; the run's steps are local, so its first workflow task lasts over 5 s.
    partner.faults.add({ sourceId, kind: 'delay', delayMs: 6_000, afterRequests: 1, times: 1 });
    const { result } = await runOnWorker(sourceId, testDeps(db.prisma));
    assert.equal(result.status, 'succeeded');
    const long = lines().filter((l) => String(l.msg).startsWith('[TMPRL1104]'));
    assert.ok(long.length > 0, `sdk-core reported the long workflow task:\n${output.join('')}`);
    for (const line of long) assert.deepEqual([line.level, line.sdk], [30, true], JSON.stringify(line));
  });
});
