// OAuth2 credentials across real worker processes (issue 38): two `durable-fetch worker` processes
// run many concurrent runs of one OAuth2 http source on one credential through several
// access-token expiries against the demo partner's strict authorization server — every item
// stored, one token call per token the API saw, none refused, the family never revoked. A worker
// SIGKILLed between the token endpoint's answer and its save (crash point
// credential-after-token-response): the restarted worker takes the open intent over and the run
// completes. And no secret (planted refresh token, client secret, the access and refresh tokens
// the workers got) is anywhere but the credential table: not in a pg_dump of the rest of the
// database, the workflow histories, the workers' logs, nor `credentials list/show`.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { before, describe, it } from 'node:test';
import { startFetch } from '../client/start-fetch.ts';
import { findCredential } from '../db/credentials/credentials.ts';
import { OAUTH_ITEMS } from '../partner/oauth/api-route.ts';
import { openValue, parseMasterKey } from '../runtime/credential-cipher.ts';
import { credentialsCli, setArgs } from './helpers/credentials-cli.ts';
import { spawnWorker, type Spawned } from './helpers/process.ts';
import { temporalAddress } from './helpers/temporal.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

const KEY_TEXT = randomBytes(32).toString('base64');
const KEY = parseMasterKey(KEY_TEXT);
const SECRET_REF = 'DF_SECRET_CW_CLIENT';
/** Distinctive, so that a leak anywhere is found by a plain search. */
const CLIENT_SECRET = `cw-secret-PLANTED-${randomBytes(8).toString('hex')}`;
const REFRESH_TOKEN = `cw-rt-PLANTED-${randomBytes(8).toString('hex')}`;
const CRASH_REFRESH_TOKEN = `cw-crash-rt-PLANTED-${randomBytes(8).toString('hex')}`;
/** Lifetime of access tokens: a token is used for half of it (the skew), so waves cross expiries. */
const TTL_SECONDS = 3;
const WAVES = 3;
const DATES_PER_WAVE = 8;
const ITEM_IDS = OAUTH_ITEMS.map((i) => i.id).sort();

const workerEnv = { DF_SECRET_CREDENTIALS_KEY: KEY_TEXT, [SECRET_REF]: CLIENT_SECRET, LOG_LEVEL: 'info' };
const stack = useWorkerStack({ name: 'credworkers', records: 0, workers: 2, env: workerEnv });
/** Every worker process of the file, the stack's and the crash test's: their logs are searched. */
const processes: Spawned[] = [];

/** `durable-fetch credentials set <id>` of `client`, the refresh token from stdin. */
async function setCredentialByCli(id: string, client: string, refreshToken: string) {
  const set = await credentialsCli(
    stack.db.url,
    setArgs(id, stack.partner.url, client, SECRET_REF),
    `${refreshToken}\n`,
    { DF_SECRET_CREDENTIALS_KEY: KEY_TEXT },
  );
  assert.equal(set.code, 0, set.stderr);
  return set;
}

async function addSource(id: string, credential: string, extra: { retryPolicy?: string } = {}) {
  await stack.db.prisma.source.create({
    data: {
      id,
      name: id,
      baseUrl: stack.partner.url,
      timezone: 'UTC',
      pageSize: 100,
      jobType: 'http',
      config: {
        request: { path: '/oauth-api/items' },
        auth: { type: 'oauth2', credential },
        records: { path: 'items', id: 'id' },
        pagination: { type: 'none' },
      },
      ...extra,
    },
  });
}

/** Starts the run of (source, date) on `taskQueue` and waits for its result. */
async function run(sourceId: string, date: string, taskQueue = stack.taskQueue) {
  const ctx = { temporal: stack.client, prisma: stack.db.prisma, taskQueue };
  const { handle } = await startFetch(ctx, { sourceId, date, requestedBy: 'test' });
  return handle.result();
}

/**
 * The partner's items as `sourceId` stored them (one row per item and source, the latest run's),
 * and how many each of its runs stored.
 */
async function stored(sourceId: string) {
  const rows = await stack.db.prisma.fetchedRecord.findMany({
    where: { sourceId },
    select: { externalId: true },
    orderBy: { externalId: 'asc' },
  });
  const runs = await stack.db.prisma.fetchRun.findMany({
    where: { sourceId },
    select: { status: true, recordsStored: true },
  });
  return { items: rows.map((r) => r.externalId), runs };
}

const tokenCalls = (family: string) =>
  stack.partner.oauth.requests.entries({ endpoint: 'token', family }).map((r) => r.outcome);

const dateOf = (wave: number, i: number) =>
  `2026-10-${String(wave * DATES_PER_WAVE + i + 1).padStart(2, '0')}`;

void describe('OAuth2 credentials on real worker processes', () => {
  let family: string;
  let crashFamily: string;

  before(async () => {
    processes.push(...stack.workers);
    const { oauth } = stack.partner;
    oauth.configure({ accessTokenTtlSeconds: TTL_SECONDS });
    oauth.authority.addClient({ id: 'cw-strict', secret: CLIENT_SECRET, rotation: true, reuseIntervalMs: 0 });
    // A provider that replays the same pair within two minutes: what a refresher that died unsaved needs.
    oauth.authority.addClient({
      id: 'cw-graceful',
      secret: CLIENT_SECRET,
      rotation: true,
      reuseIntervalMs: 120_000,
    });
    family = oauth.authority.grant('cw-strict', { refreshToken: REFRESH_TOKEN }).family;
    crashFamily = oauth.authority.grant('cw-graceful', { refreshToken: CRASH_REFRESH_TOKEN }).family;
    await setCredentialByCli('cw-items', 'cw-strict', REFRESH_TOKEN);
    await setCredentialByCli('cw-crash', 'cw-graceful', CRASH_REFRESH_TOKEN);
    await addSource('cw-src', 'cw-items');
    await addSource('cw-crash-src', 'cw-crash', { retryPolicy: 'partnerHttpQuick' });
  });

  // The load and the crash on their own task queues and credentials at once; the search for
  // secrets after both.
  void describe('at once', { concurrency: true }, () => {
    it(`two worker processes × ${DATES_PER_WAVE} concurrent runs × ${WAVES} token lifetimes: every item stored, one token call per token used, none refused`, async () => {
      for (let wave = 0; wave < WAVES; wave++) {
        const results = await Promise.all(
          Array.from({ length: DATES_PER_WAVE }, (_, i) => run('cw-src', dateOf(wave, i))),
        );
        for (const result of results) assert.equal(result.status, 'succeeded');
        // Past the last token's lifetime: the next wave needs a new one.
        await new Promise((resolve) => setTimeout(resolve, TTL_SECONDS * 1000 + 100));
      }
      const { items, runs } = await stored('cw-src');
      assert.deepEqual(items, ITEM_IDS, "the partner's whole list stored");
      assert.equal(runs.length, WAVES * DATES_PER_WAVE);
      assert.deepEqual(
        runs,
        runs.map(() => ({ status: 'succeeded', recordsStored: ITEM_IDS.length })),
        'each run stored every item',
      );
      const calls = tokenCalls(family);
      assert.ok(calls.length >= WAVES, `a refresh per expiry at least (${calls.length})`);
      assert.deepEqual(
        calls,
        calls.map(() => 'issued'),
        'every token call issued: none refused, no reuse',
      );
      // Single flight across the processes: every token issued was one the API saw.
      const used = new Set(
        stack.partner.oauth.requests
          .entries({ endpoint: 'api', family })
          .filter((r) => r.outcome === 'ok')
          .map((r) => r.accessTokenId),
      );
      assert.equal(used.size, calls.length, 'one token call per token used');
      assert.equal(stack.partner.oauth.authority.family(family)?.revoked, false);
    });

    it('a worker SIGKILLed between the token response and its save: the restarted worker takes the intent over and the run completes', async () => {
      const taskQueue = `${stack.taskQueue}-crash`;
      const env = {
        DATABASE_URL: stack.db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        DURABLE_FETCH_TASK_QUEUE: taskQueue,
        ...workerEnv,
      };
      const doomed = spawnWorker({ ...env, DURABLE_FETCH_CRASH_POINT: 'credential-after-token-response' });
      processes.push(doomed);
      await doomed.waitFor(/worker polling task queue/, 60_000);
      const date = '2026-11-01';
      const result = run('cw-crash-src', date, taskQueue);
      const { signal } = await doomed.ended;
      assert.equal(signal, 'SIGKILL', doomed.output());
      assert.match(doomed.output(), /crash point credential-after-token-response: SIGKILL/);
      assert.notEqual(
        (await findCredential(stack.db.prisma, 'cw-crash'))?.refreshIntent,
        null,
        'intent open',
      );
      assert.deepEqual(tokenCalls(crashFamily), ['issued'], 'the refresh token was spent by the lost call');

      const restarted = spawnWorker(env);
      processes.push(restarted);
      try {
        assert.equal((await result).status, 'succeeded');
      } finally {
        await restarted.stop('SIGTERM', 10_000);
      }
      assert.deepEqual(await stored('cw-crash-src'), {
        items: ITEM_IDS,
        runs: [{ status: 'succeeded', recordsStored: ITEM_IDS.length }],
      });
      assert.deepEqual(tokenCalls(crashFamily), ['issued', 'replayed'], 'the stored token tried once more');
      assert.equal(stack.partner.oauth.authority.family(crashFamily)?.revoked, false);
      const row = await findCredential(stack.db.prisma, 'cw-crash');
      assert.equal(row?.status, 'active');
      assert.equal(row?.refreshIntent, null);
    });
  });

  it('no secret anywhere but the credential table: not in pg_dump of the rest, histories, worker logs or credentials list/show', async () => {
    const secrets = [CLIENT_SECRET, REFRESH_TOKEN, CRASH_REFRESH_TOKEN];
    for (const id of ['cw-items', 'cw-crash']) {
      const row = await findCredential(stack.db.prisma, id);
      assert.ok(row?.accessToken && row.refreshToken, id);
      secrets.push(openValue(KEY, id, 'access_token', row.accessToken));
      secrets.push(openValue(KEY, id, 'refresh_token', row.refreshToken));
    }
    const leaks = (where: string, text: string) => {
      for (const secret of secrets) assert.ok(!text.includes(secret), `${where} holds a secret`);
    };
    const { stdout: dump } = await promisify(execFile)(
      '/usr/bin/pg_dump',
      ['--exclude-table-data=durable_fetch.credential', '--dbname', stack.db.url],
      { maxBuffer: 256 * 1024 * 1024 },
    );
    assert.match(dump, /credential\.set/, 'the dump holds the audit entries of credentials set');
    leaks('pg_dump', dump);
    // The check is sharp: the credential table's own data does hold them, sealed.
    const sealed = await stack.db.prisma.credential.count();
    assert.equal(sealed, 2);

    const workflowIds = [
      ...Array.from({ length: WAVES * DATES_PER_WAVE }, (_, n) => `fetch/http/cw-src/${dateOf(0, n)}`),
      'fetch/http/cw-crash-src/2026-11-01',
    ];
    for (const workflowId of workflowIds) {
      const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
      // Payload bytes decoded: a plain JSON of the history would hide them as numbers.
      const text = JSON.stringify(history, (_k, v: unknown) =>
        v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : v,
      );
      assert.match(text, /cw-(crash-)?src/, `${workflowId}: its history is readable`);
      leaks(`history of ${workflowId}`, text);
    }

    for (const [i, p] of processes.entries()) {
      assert.match(p.output(), /worker polling task queue/, `worker ${i}'s log was read`);
      leaks(`log of worker ${i}`, p.output());
    }

    for (const args of [
      ['credentials', 'list'],
      ['credentials', 'show', 'cw-crash', '--json'],
    ]) {
      const out = await credentialsCli(stack.db.url, args, '', { DF_SECRET_CREDENTIALS_KEY: KEY_TEXT });
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /cw-/);
      leaks(args.join(' '), out.stdout + out.stderr);
    }
  });
});
