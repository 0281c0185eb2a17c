// Connections to a Temporal frontend that is not the embedded dev server (issue 40, item 4): a
// second dev server with its own namespace, behind TLS frontends made in the test
// (test/helpers/secure-temporal.ts): one demands a client certificate of a throw-away CA (mTLS),
// the other an API key. Real `durable-fetch worker`, `publisher` and CLI processes reach it
// through TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TEMPORAL_TLS_* / TEMPORAL_API_KEY, and through
// an envconfig profile (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE); runs complete in that namespace
// with their rows in this file's database. A wrong certificate, API key or namespace stops the
// CLI and the worker with one line that names the setting to check, and no secret.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { enqueueFetch } from '../client/enqueue-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { assertOneLineError, json, ok, runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { spawnTs, spawnWorker, type Spawned, within } from './helpers/process.ts';
import { startSecureTemporal, type SecureTemporal } from './helpers/secure-temporal.ts';
import { testClient } from './helpers/temporal.ts';

const NAMESPACE = 'tenant-a';
const DATE = '2026-03-02';
const RECORDS = 120; // two stored pages

let secure: SecureTemporal;
let db: TestDatabase;
let partner: PartnerServer;
/** Plaintext, straight to the second dev server: the test's own look at what happened there. */
let tenant: Client;
let shared: Client;

before(async () => {
  const cliPath = process.env.DF_TEST_TEMPORAL_CLI;
  assert.ok(cliPath, 'DF_TEST_TEMPORAL_CLI is not set: run the tests with test/run.ts');
  [secure, db, partner, shared] = await Promise.all([
    startSecureTemporal({ cliPath, namespace: NAMESPACE }),
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => RECORDS }),
    testClient(),
  ]);
  tenant = new Client({
    connection: await Connection.connect({ address: secure.plainAddress }),
    namespace: NAMESPACE,
  });
});

after(async () => {
  await tenant?.connection.close();
  await shared?.connection.close();
  await partner?.close();
  await db?.drop();
  await secure?.stop();
});

/**
 * `localhost:<port>`: the host name the server's certificate names, as a real address is (with an
 * IP address grpc-js sends it as the TLS server name, and Node.js warns about that).
 */
const byName = (address: string) => address.replace('127.0.0.1', 'localhost');

/** mTLS through the TEMPORAL_TLS_* variables, with `cert` and `key` as the client's. */
function mtlsEnv(cert = secure.certs.clientCert, key = secure.certs.clientKey): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: byName(secure.mtlsAddress),
    TEMPORAL_NAMESPACE: NAMESPACE,
    TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: key,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: secure.certs.caCert,
  };
}

/** The API key frontend through TEMPORAL_API_KEY (server TLS with the throw-away CA). */
function apiKeyEnv(apiKey: string | undefined): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: byName(secure.apiKeyAddress),
    TEMPORAL_NAMESPACE: NAMESPACE,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: secure.certs.caCert,
    ...(apiKey === undefined ? { TEMPORAL_TLS: 'true' } : { TEMPORAL_API_KEY: apiKey }),
  };
}

/** An envconfig file with a profile per frontend: TEMPORAL_CONFIG_FILE and TEMPORAL_PROFILE select one. */
async function profileFile(): Promise<string> {
  const { certs } = secure;
  const file = path.join(certs.dir, 'temporal.toml');
  await writeFile(
    file,
    [
      '[profile.self-hosted]',
      `address = "${byName(secure.mtlsAddress)}"`,
      `namespace = "${NAMESPACE}"`,
      '[profile.self-hosted.tls]',
      `client_cert_path = "${certs.clientCert}"`,
      `client_key_path = "${certs.clientKey}"`,
      `server_ca_cert_path = "${certs.caCert}"`,
      '',
      '[profile.cloud]',
      `address = "${byName(secure.apiKeyAddress)}"`,
      `namespace = "${NAMESPACE}"`,
      `api_key = "${secure.apiKey}"`,
      '[profile.cloud.tls]',
      `server_ca_cert_path = "${certs.caCert}"`,
      '',
    ].join('\n'),
  );
  return file;
}

/** The processes of one way to connect: a worker and a publisher on a task queue of their own. */
async function startProcesses(temporalEnv: Record<string, string>, name: string) {
  const env = {
    ...temporalEnv,
    DATABASE_URL: db.url,
    DURABLE_FETCH_TASK_QUEUE: `test-tls-${name}-${randomUUID()}`,
    PARTNER_PAGE_LIMIT: '50',
    // Start commands only: the run's own events stay in the outbox, no webhook needed.
    DURABLE_FETCH_OUTBOX_ROUTES: 'temporal.start_workflow=temporal',
    LOG_LEVEL: 'warn',
  };
  const worker = spawnWorker(env);
  const publisher = spawnTs(['bin/durable-fetch.js', 'publisher'], env);
  await Promise.all([
    worker.waitFor(/worker polling task queue/, 60_000),
    publisher.waitFor(/publisher running/, 60_000),
  ]);
  return { env, worker, publisher };
}

async function stopAll(...processes: Spawned[]): Promise<void> {
  await Promise.all(processes.map((p) => p.stop('SIGKILL', 5_000)));
}

const workflowIdOf = (sourceId: string) => `fetch/fetch-records/${sourceId}/${DATE}`;

/** The run's rows in this file's database, and where its workflow is (and is not). */
async function assertRanInTenant(sourceId: string): Promise<void> {
  const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
  assert.equal(run.status, 'succeeded');
  assert.equal(run.workflowId, workflowIdOf(sourceId));
  assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), RECORDS);
  const described = await tenant.workflow.getHandle(workflowIdOf(sourceId)).describe();
  assert.equal(described.status.name, 'COMPLETED');
  // Not on the suite's shared server, nor in the second server's `default`.
  await assert.rejects(shared.workflow.getHandle(workflowIdOf(sourceId)).describe(), WorkflowNotFoundError);
  const otherNamespace = new Client({ connection: tenant.connection, namespace: 'default' });
  await assert.rejects(
    otherNamespace.workflow.getHandle(workflowIdOf(sourceId)).describe(),
    WorkflowNotFoundError,
  );
}

/**
 * One way to connect, whole: a run started by the CLI and one relayed by the publisher from the
 * outbox both complete in the tenant's namespace, and `status` sees the worker polling there.
 */
async function proveConnection(temporalEnv: Record<string, string>, name: string): Promise<void> {
  const byCli = `tls-${name}-cli`;
  const byOutbox = `tls-${name}-outbox`;
  await createSource(db.prisma, byCli, partner.url);
  await createSource(db.prisma, byOutbox, partner.url);
  const { env, worker, publisher } = await startProcesses(temporalEnv, name);
  try {
    const out = ok(await runCli(['run', byCli, '--date', DATE, '--wait'], env, 120_000));
    assert.match(out, new RegExp(`succeeded: ${RECORDS} records in 2 pages`), out);

    await db.prisma.$transaction((tx) =>
      enqueueFetch(
        tx,
        { sourceId: byOutbox, date: DATE, requestedBy: 'test' },
        { taskQueue: env.DURABLE_FETCH_TASK_QUEUE },
      ),
    );
    const relayed = tenant.workflow.getHandle(workflowIdOf(byOutbox));
    await waitFor(
      () =>
        relayed.describe().then(
          () => true,
          () => false,
        ),
      `the publisher to start ${workflowIdOf(byOutbox)}:\n${publisher.output()}`,
      60_000,
    );
    await within(relayed.result(), 120_000, () => worker.output());

    await assertRanInTenant(byCli);
    await assertRanInTenant(byOutbox);
    const status = json<{ builds: { taskQueue: string; pollers: number }[] }>(
      await runCli(['status', '--json'], env),
    );
    assert.ok(
      status.builds.some((b) => b.taskQueue === env.DURABLE_FETCH_TASK_QUEUE && b.pollers >= 1),
      JSON.stringify(status.builds),
    );
  } finally {
    await stopAll(worker, publisher);
  }
}

/** The one line a worker prints when it cannot start; it must exit 1 with nothing else. */
async function workerStartFailure(temporalEnv: Record<string, string>): Promise<string> {
  const worker = spawnWorker({
    ...temporalEnv,
    DATABASE_URL: db.url,
    DURABLE_FETCH_TASK_QUEUE: `test-tls-refused-${randomUUID()}`,
    LOG_LEVEL: 'warn',
  });
  try {
    const { code } = await within(worker.ended, 60_000, () => worker.output());
    assert.equal(code, 1, worker.output());
    const lines = worker
      .output()
      .split('\n')
      .filter((l) => l.trim() !== '');
    assert.equal(lines.length, 1, worker.output());
    assert.match(lines[0]!, /^durable-fetch: /);
    return lines[0]!;
  } finally {
    await worker.stop('SIGKILL', 5_000);
  }
}

describe('Temporal over TLS: a frontend that is not the embedded dev server', () => {
  it('temporal-tls: worker, publisher and CLI reach the namespace over mTLS through TEMPORAL_TLS_* variables', async () => {
    await proveConnection(mtlsEnv(), 'mtls');
  });

  it('temporal-tls: an envconfig profile (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE) alone selects the mTLS cluster', async () => {
    await proveConnection(
      { TEMPORAL_CONFIG_FILE: await profileFile(), TEMPORAL_PROFILE: 'self-hosted' },
      'profile',
    );
  });

  it('temporal-tls: an API key from a profile reaches the namespace; the key is sent on every call', async () => {
    await proveConnection({ TEMPORAL_CONFIG_FILE: await profileFile(), TEMPORAL_PROFILE: 'cloud' }, 'apikey');
  });
});

describe('Temporal over TLS: one clear line when the connection is refused', () => {
  const sourceId = 'tls-refused';
  const cliRun = (env: Record<string, string>) =>
    runCli(['run', sourceId, '--date', DATE], { DATABASE_URL: db.url, ...env });

  before(async () => {
    await createSource(db.prisma, sourceId, partner.url);
  });

  /** The CLI and a worker both stop with one line matching `pattern`, and print nothing of `secrets`. */
  async function assertRefused(
    env: Record<string, string>,
    pattern: RegExp,
    secrets: string[] = [],
  ): Promise<void> {
    const cli = await cliRun(env);
    assertOneLineError(cli, pattern);
    const workerLine = await workerStartFailure(env);
    assert.match(workerLine, pattern);
    const keyFile = await readFile(secure.certs.clientKey, 'utf8');
    for (const text of [cli.stderr, workerLine]) {
      for (const secret of [...secrets, secure.apiKey, 'PRIVATE KEY', keyFile.split('\n')[1]!]) {
        assert.ok(!text.includes(secret), `printed a secret: ${text}`);
      }
    }
  }

  it('temporal-tls: a client certificate of another CA is refused in the handshake, named as such', async () => {
    await assertRefused(
      mtlsEnv(secure.certs.strangerCert, secure.certs.strangerKey),
      /the server refused the client certificate .*; check TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH$/,
    );
  });

  it("temporal-tls: a server certificate the client's CA did not sign is named, with the setting", async () => {
    const env = {
      ...mtlsEnv(),
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(secure.certs.dir, 'other-ca.pem'),
    };
    const cli = await cliRun(env);
    assertOneLineError(
      cli,
      /the server's certificate is not trusted \(\w+\); check TEMPORAL_TLS_SERVER_CA_CERT_PATH/,
    );
  });

  it('temporal-tls: TLS against the plaintext port, and plaintext against the TLS port, are named as such', async () => {
    const tlsToPlain = await cliRun({ ...mtlsEnv(), TEMPORAL_ADDRESS: byName(secure.plainAddress) });
    assertOneLineError(
      tlsToPlain,
      /the TLS handshake failed; the port may not speak TLS \(ERR_SSL_WRONG_VERSION_NUMBER\); check TEMPORAL_ADDRESS and TEMPORAL_TLS$/,
    );
    const plainToTls = await cliRun({
      TEMPORAL_ADDRESS: byName(secure.mtlsAddress),
      TEMPORAL_NAMESPACE: NAMESPACE,
    });
    assertOneLineError(
      plainToTls,
      /the server does not answer plaintext HTTP\/2; it may expect TLS .*; check TEMPORAL_ADDRESS, and TEMPORAL_TLS=true/,
    );
  });

  it('temporal-tls: a wrong API key is refused as UNAUTHENTICATED, naming TEMPORAL_API_KEY and not the key', async () => {
    const wrongKey = `wrong-${randomUUID()}`;
    await assertRefused(
      apiKeyEnv(wrongKey),
      /refused the credentials \(UNAUTHENTICATED: invalid API key\); check TEMPORAL_API_KEY/,
      [wrongKey],
    );
  });

  it('temporal-tls: a missing API key is refused as UNAUTHENTICATED, saying none is set', async () => {
    await assertRefused(
      apiKeyEnv(undefined),
      /refused the credentials \(UNAUTHENTICATED: invalid API key\); check TEMPORAL_API_KEY, or TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH, of which none is set$/,
    );
  });

  it('temporal-tls: a namespace the server does not have is named, with TEMPORAL_NAMESPACE', async () => {
    await assertRefused(
      { ...mtlsEnv(), TEMPORAL_NAMESPACE: 'no-such-tenant' },
      /has no namespace "no-such-tenant"; check TEMPORAL_NAMESPACE/,
    );
  });
});
