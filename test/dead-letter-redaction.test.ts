// Nothing secret in a dead letter (R11, R12e): a token is placed where a careless
// implementation would leak it — the source's credentials (resolved by the worker's `secret`
// function and sent as `Authorization: Bearer …`), a query parameter of the source's base URL, and
// the partner's error body — and the run is made to fail for good. Then the token must appear
// nowhere we keep or show: the dead letter, the run, any other row of the database (but the
// source's own configuration), the worker's logs (its pino logger at debug level and, routed into
// it, the Temporal SDK's own log), the workflow's whole history, and `dlq show|list --json`.
//
// This file installs the Temporal runtime logger itself (as the worker does in production), so it
// builds its worker directly instead of with helpers/temporal.ts `testWorker` (which installs a
// quiet one: a process may install only one).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { type Client, WorkflowFailedError } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection } from '@temporalio/worker';
import { pino } from 'pino';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { installRuntimeLogger } from '../worker/runtime-logger.ts';
import { buildWorker, WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from '../worker/worker.ts';
import { runCli, type CliResult } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { fetchSteps } from './helpers/page-fetches.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const TOKEN = 'tok-0123456789-SECRET';
const SECRET_REF = 'DF_SECRET_DLQ_PARTNER_TOKEN';
const SOURCE = 'dlq-secret';
const DATE = '2026-10-10';
const WORKFLOW_ID = `fetch/fetch-records/${SOURCE}/${DATE}`;

/** Every line the worker logged (its own logger and, routed into it, the Temporal SDK's). */
const logLines: string[] = [];
const log = pino(
  { level: 'debug' },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  }),
);
// Before this process opens any native connection to Temporal (only one runtime per process).
installRuntimeLogger(log, 'DEBUG');

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let env: Record<string, string>;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => 120 });
  client = await testClient();
  env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    TEMPORAL_UI_URL: 'http://ui.example.test',
  };
});

after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/** Runs `fn` while a worker with `secret` resolving the token and the capturing logger polls. */
async function withWorker<T>(taskQueue: string, fn: () => Promise<T>): Promise<T> {
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  try {
    const noop = () => {};
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
      logger: { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop },
    });
    const worker = await buildWorker({
      connection,
      namespace: 'default',
      taskQueue,
      workflowBundle,
      deps: testDeps(db.prisma, {
        log,
        secret: (ref) => (ref === SECRET_REF ? TOKEN : undefined),
      }),
    });
    return await worker.runUntil(fn);
  } finally {
    await connection.close();
  }
}

/** Payloads of a history (inputs, results, heartbeats, failure details) decoded to text. */
function payloadTexts(historyJson: unknown): string[] {
  const texts: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== 'object' || node === null) return;
    const obj = node as Record<string, unknown>;
    if (typeof obj.data === 'string' && 'metadata' in obj)
      texts.push(Buffer.from(obj.data, 'base64').toString('utf8'));
    Object.values(obj).forEach(walk);
  };
  walk(historyJson);
  return texts;
}

function stdoutOf(result: CliResult): string {
  assert.equal(result.code, 0, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  return result.stdout;
}

describe('dead letter redaction', { timeout: 300_000 }, () => {
  let deadLetterId: string;

  before(async () => {
    // The token in the credentials (by reference) and in the base URL's query string.
    await createSource(db.prisma, SOURCE, `${partner.url}/?api_key=${TOKEN}`, { credentialsRef: SECRET_REF });
    // The partner refuses for good, and its error body carries the token.
    partner.faults.add({
      sourceId: SOURCE,
      kind: 'status',
      status: 422,
      times: 100,
      body: `invalid request: api_key=${TOKEN} is not allowed for account 42 (Bearer ${TOKEN})`,
    });
    const taskQueue = `test-${randomUUID()}`;
    const err = await withWorker(taskQueue, async () => {
      const started = await startFetch(
        { temporal: client, prisma: db.prisma, taskQueue },
        { sourceId: SOURCE, date: DATE, requestedBy: 'test' },
      );
      return started.handle.result().catch((e: unknown) => e);
    });
    assert.ok(err instanceof WorkflowFailedError, String(err));
    const letters = await db.prisma.deadLetter.findMany({ where: { sourceId: SOURCE } });
    assert.equal(letters.length, 1);
    deadLetterId = letters[0]!.id;
  });

  it('the token was really in play: the partner got the Authorization header and sent the token back', async () => {
    const entries = partner.ledger.entries({ sourceId: SOURCE });
    assert.ok(entries.length >= 1, 'requests reached the partner despite the query in the base URL');
    for (const e of entries) {
      assert.equal(e.path, `/sources/${SOURCE}/records`);
      assert.equal(e.auth, true, 'Authorization header sent');
      assert.deepEqual([e.status, e.fault], [422, 'status']);
    }
    // What the partner answers carries the token (a direct request shows it).
    partner.faults.add({ sourceId: SOURCE, kind: 'status', status: 422, body: `api_key=${TOKEN}` });
    const res = await fetch(`${partner.url}/sources/${SOURCE}/records?date=${DATE}`);
    assert.ok((await res.text()).includes(TOKEN));
    // The scan below does find the token where it is on purpose: the source's configuration.
    const source = await db.prisma.source.findUniqueOrThrow({ where: { id: SOURCE } });
    assert.ok(JSON.stringify(source).includes(TOKEN));
  });

  it('the dead letter and the run hold no trace of the token', async () => {
    const letter = await db.prisma.deadLetter.findUniqueOrThrow({ where: { id: deadLetterId } });
    assert.deepEqual(
      [letter.status, letter.errorType, letter.errorCode, letter.errorMessage],
      [
        'open',
        'InvalidInput',
        'HTTP_422',
        // The partner's own words, with the token masked wherever it stood.
        `partner ${SOURCE} records: rejected with status 422: "invalid request: api_key=*** is not allowed for account 42 (Bearer ***)"`,
      ],
    );
    assert.ok(!JSON.stringify(letter).includes(TOKEN), JSON.stringify(letter));
    const run = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: letter.fetchRunId } });
    assert.equal(run.status, 'dead_lettered');
    assert.ok(!JSON.stringify(run).includes(TOKEN), JSON.stringify(run));
  });

  it('no other row of the database holds the token (the source configuration aside)', async () => {
    const tables = await db.prisma.$queryRaw<{ table_name: string }[]>`
      SELECT table_name FROM information_schema.tables
       WHERE table_schema = ANY (current_schemas(false)) AND table_type = 'BASE TABLE' AND table_name <> 'source'`;
    assert.ok(tables.some((t) => t.table_name === 'dead_letter'));
    for (const { table_name } of tables) {
      const [row] = await db.prisma.$queryRawUnsafe<{ hits: bigint }[]>(
        `SELECT count(*) AS hits FROM "${table_name}" t WHERE row_to_json(t)::text LIKE $1`,
        `%${TOKEN}%`,
      );
      assert.equal(Number(row?.hits ?? 0), 0, `table ${table_name} holds the token`);
    }
  });

  it("the worker's logs hold no trace of the token", () => {
    const text = logLines.join('');
    // The capture works: the run's own log lines and the SDK's are there.
    assert.match(text, /"msg":"run claimed"/);
    assert.match(text, /"msg":"run dead-lettered"/);
    assert.match(text, /"sdk":true/);
    assert.ok(!text.includes(TOKEN), 'a log line holds the token');
    // The partner's words reach the logs scrubbed (`api_key=***`); nothing else of that query does.
    assert.ok(!/api_key=(?!\*\*\*)/.test(text), 'a log line holds the base URL query or the raw error body');
  });

  it("the workflow's history holds no trace of the token, in its JSON or any payload", async () => {
    const history = await client.workflow.getHandle(WORKFLOW_ID).fetchHistory();
    const json = JSON.parse(JSON.stringify(history)) as unknown;
    const text = JSON.stringify(json);
    assert.ok(
      fetchSteps(history.events ?? []).some((step) => step.failedAt !== null),
      'the failed page fetch is there',
    );
    assert.ok(text.includes(`partner ${SOURCE} records: rejected with status 422`), 'the failure is there');
    assert.ok(!text.includes(TOKEN), 'the history JSON holds the token');
    const payloads = payloadTexts(json);
    assert.ok(payloads.length > 0, 'payloads were decoded');
    for (const payload of payloads)
      assert.ok(!payload.includes(TOKEN), `a payload holds the token: ${payload}`);
  });

  it('`dlq show` and `dlq list` print no trace of the token', async () => {
    const shown = stdoutOf(await runCli(['dlq', 'show', deadLetterId, '--json'], env));
    const parsed = JSON.parse(shown) as { id: string; timeline?: { activity: string; outcome: string }[] };
    assert.equal(parsed.id, deadLetterId);
    assert.ok(
      parsed.timeline?.some((t) => t.activity === 'fetchPage' && t.outcome === 'failed'),
      'the timeline was read from Temporal',
    );
    assert.ok(!shown.includes(TOKEN), shown);
    const text = stdoutOf(await runCli(['dlq', 'show', deadLetterId], env));
    assert.ok(!text.includes(TOKEN), text);
    const listed = stdoutOf(await runCli(['dlq', 'list', '--source', SOURCE, '--json'], env));
    assert.ok(listed.includes(deadLetterId));
    assert.ok(!listed.includes(TOKEN), listed);
  });
});
