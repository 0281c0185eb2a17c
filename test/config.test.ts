// The one module that reads the environment: defaults, validation and derived addresses.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import {
  databaseUrl,
  loadConfig,
  migrationUrl,
  PROJECT_ROOT,
  partnerUrl,
  temporalAddress,
} from '../runtime/config.ts';
import { configError } from './helpers/config-errors.ts';

describe('config', () => {
  it('config: an empty environment gives the documented local defaults', () => {
    const config = loadConfig({});
    assert.deepEqual(config, {
      projectRoot: PROJECT_ROOT,
      dataDir: path.join(PROJECT_ROOT, '.data'),
      database: {
        url: undefined,
        directUrl: undefined,
        embeddedPort: 5433,
        name: 'durable_fetch',
        preparedStatements: true,
        pooling: 'session',
      },
      temporal: {
        address: undefined,
        connection: undefined,
        namespace: 'default',
        cliPath: undefined,
        port: 7233,
        uiPort: 8233,
        uiUrl: 'http://localhost:8233',
        taskQueue: 'durable-fetch',
      },
      partner: { host: '127.0.0.1', port: 4010, pageLimit: 50, lateEffectMs: 0 },
      http: { connectTimeoutMs: 5_000, responseTimeoutMs: 15_000, maxResponseBytes: 16 * 1024 * 1024 },
      runs: {
        maxFutureDays: 0,
        leaseTtlMs: 300_000,
        idempotencyRetentionMs: 30 * 86_400_000,
        cleanupIntervalMs: 600_000,
        sweepIntervalMs: 60_000,
        maxInputBytes: 16 * 1024,
      },
      metrics: { enabled: true, host: '0.0.0.0', port: 9464, sampleMs: 15_000 },
      worker: {
        shutdownGraceMs: 20_000,
        activitySlots: 20,
        cachedWorkflows: 250,
        downstreamRefreshMs: 10_000,
      },
      outbox: {
        routes: [
          { pattern: 'temporal.start_workflow', sink: 'temporal' },
          { pattern: '*', sink: 'webhook' },
        ],
        batchSize: 200,
        concurrency: 32,
        leaseMs: 30_000,
        pollMs: 100,
        maxAttempts: 12,
        backoff: { initialMs: 1_000, coefficient: 2, maximumMs: 300_000 },
        graceMs: 10_000,
        retentionMs: 7 * 86_400_000,
        webhookUrl: 'http://127.0.0.1:4010/events',
        nats: {
          servers: 'nats://127.0.0.1:4222',
          stream: 'DURABLE_FETCH',
          subjectPrefix: 'durable-fetch',
          duplicateWindowMs: 900_000,
        },
      },
      logLevel: 'info',
      crashPoint: undefined,
    });
  });

  it('config: outbox routes map topics to sinks; a bad route or unknown sink is refused by name', () => {
    const config = loadConfig({
      DURABLE_FETCH_OUTBOX_ROUTES: 'fetch.page_stored=nats, fetch.*=webhook,temporal.start_workflow=temporal',
      DURABLE_FETCH_WEBHOOK_URL: 'https://hooks.example/events',
    });
    assert.deepEqual(config.outbox.routes, [
      { pattern: 'fetch.page_stored', sink: 'nats' },
      { pattern: 'fetch.*', sink: 'webhook' },
      { pattern: 'temporal.start_workflow', sink: 'temporal' },
    ]);
    assert.equal(config.outbox.webhookUrl, 'https://hooks.example/events');
    assert.match(
      configError({ DURABLE_FETCH_OUTBOX_ROUTES: 'fetch.*=kafka' }).message,
      /DURABLE_FETCH_OUTBOX_ROUTES: unknown sink 'kafka'/,
    );
    assert.match(
      configError({ DURABLE_FETCH_OUTBOX_ROUTES: 'fetch.*' }).message,
      /DURABLE_FETCH_OUTBOX_ROUTES: 'fetch.\*' is not pattern=sink/,
    );
    assert.match(
      configError({ DURABLE_FETCH_WEBHOOK_URL: 'ftp://x/y' }).message,
      /DURABLE_FETCH_WEBHOOK_URL/,
    );
    assert.match(configError({ DURABLE_FETCH_NATS_STREAM: 'a.b' }).message, /DURABLE_FETCH_NATS_STREAM/);
  });

  it('config: without DATABASE_URL the app uses the embedded PostgreSQL on its configured port and database', () => {
    assert.equal(databaseUrl(loadConfig({})), 'postgres://postgres:postgres@127.0.0.1:5433/durable_fetch');
    assert.equal(
      databaseUrl(loadConfig({ DURABLE_FETCH_PG_PORT: '6543', DURABLE_FETCH_DB_NAME: 'df_dev' })),
      'postgres://postgres:postgres@127.0.0.1:6543/df_dev',
    );
  });

  it('config: prepared statements are on unless DURABLE_FETCH_DB_PREPARED_STATEMENTS is false; another value is refused', () => {
    assert.equal(loadConfig({}).database.preparedStatements, true);
    assert.equal(
      loadConfig({ DURABLE_FETCH_DB_PREPARED_STATEMENTS: 'false' }).database.preparedStatements,
      false,
    );
    assert.match(
      configError({ DURABLE_FETCH_DB_PREPARED_STATEMENTS: 'off' }).message,
      /\bDURABLE_FETCH_DB_PREPARED_STATEMENTS: /,
    );
  });

  it('config: DURABLE_FETCH_DB_POOLING is session unless transaction; migrations then need DIRECT_DATABASE_URL', () => {
    assert.equal(loadConfig({}).database.pooling, 'session');
    const pooled = {
      DATABASE_URL: 'postgres://app@pgbouncer:6432/df',
      DURABLE_FETCH_DB_POOLING: 'transaction',
    };
    assert.equal(loadConfig(pooled).database.pooling, 'transaction');
    assert.match(
      configError({ DURABLE_FETCH_DB_POOLING: 'statement' }).message,
      /\bDURABLE_FETCH_DB_POOLING: /,
    );
    assert.match(configError({ DIRECT_DATABASE_URL: 'mysql://x/y' }).message, /\bDIRECT_DATABASE_URL: /);
    assert.throws(() => migrationUrl(loadConfig(pooled)), /set DIRECT_DATABASE_URL/);
    const direct = 'postgres://app@db.internal:5432/df';
    assert.equal(migrationUrl(loadConfig({ ...pooled, DIRECT_DATABASE_URL: direct })), direct);
    // Without a pooler, migrations use DATABASE_URL, as ever.
    assert.equal(migrationUrl(loadConfig({ DATABASE_URL: direct })), direct);
  });

  it('config: DATABASE_URL is used as given and may be postgres:// or postgresql://', () => {
    for (const url of [
      'postgres://app:pw@db.internal:5432/df',
      'postgresql://app@db.internal/df?sslmode=require',
    ]) {
      const config = loadConfig({ DATABASE_URL: url });
      assert.equal(config.database.url, url);
      assert.equal(databaseUrl(config), url);
    }
  });

  it('config: a DATABASE_URL that is not PostgreSQL is refused naming the variable, never echoing the value', () => {
    for (const url of [
      'mysql://app:s3cret-pw@db.internal:3306/df',
      'http://app:s3cret-pw@db.internal/df',
      's3cret-pw',
    ]) {
      const { code, message } = configError({ DATABASE_URL: url });
      assert.equal(code, 'INVALID_CONFIG');
      assert.match(message, /^invalid configuration: DATABASE_URL: /);
      assert.ok(!message.includes('s3cret-pw'), message);
      assert.ok(!message.includes('db.internal'), message);
    }
  });

  it('config: every invalid variable is named in one error, without its value', () => {
    const { code, message } = configError({
      DURABLE_FETCH_PG_PORT: '70000',
      LOG_LEVEL: 'loudest',
      DURABLE_FETCH_MAX_FUTURE_DAYS: '-4',
      HTTP_CONNECT_TIMEOUT_MS: 'fastish',
      TEMPORAL_UI_URL: 'ui-at-somewhere',
      DURABLE_FETCH_DB_NAME: 'Bad-Name',
    });
    assert.equal(code, 'INVALID_CONFIG');
    for (const name of [
      'DURABLE_FETCH_PG_PORT',
      'LOG_LEVEL',
      'DURABLE_FETCH_MAX_FUTURE_DAYS',
      'HTTP_CONNECT_TIMEOUT_MS',
      'TEMPORAL_UI_URL',
      'DURABLE_FETCH_DB_NAME',
    ]) {
      assert.match(message, new RegExp(`\\b${name}: `), `names ${name}: ${message}`);
    }
    for (const value of ['70000', 'loudest', '-4', 'fastish', 'ui-at-somewhere', 'Bad-Name']) {
      assert.ok(!message.includes(value), `does not echo ${value}: ${message}`);
    }
  });

  it('config: numeric variables are read from their string form', () => {
    const config = loadConfig({
      DURABLE_FETCH_MAX_FUTURE_DAYS: '2',
      DURABLE_FETCH_LEASE_TTL_MS: '60000',
      DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS: '1',
      PARTNER_PAGE_LIMIT: '500',
    });
    assert.deepEqual(config.runs, {
      maxFutureDays: 2,
      leaseTtlMs: 60_000,
      idempotencyRetentionMs: 86_400_000,
      cleanupIntervalMs: 600_000,
      sweepIntervalMs: 60_000,
      maxInputBytes: 16 * 1024,
    });
    assert.equal(config.partner.pageLimit, 500);
    assert.match(configError({ PARTNER_PAGE_LIMIT: '501' }).message, /PARTNER_PAGE_LIMIT/);
    assert.match(
      configError({ DURABLE_FETCH_MAX_FUTURE_DAYS: '1.5' }).message,
      /DURABLE_FETCH_MAX_FUTURE_DAYS/,
    );
  });

  it('config: DURABLE_FETCH_SHUTDOWN_GRACE_MS is a whole number of milliseconds, 0 allowed', () => {
    assert.equal(loadConfig({ DURABLE_FETCH_SHUTDOWN_GRACE_MS: '0' }).worker.shutdownGraceMs, 0);
    assert.equal(loadConfig({ DURABLE_FETCH_SHUTDOWN_GRACE_MS: '1500' }).worker.shutdownGraceMs, 1500);
    for (const bad of ['-1', '1.5', 'soon']) {
      assert.match(
        configError({ DURABLE_FETCH_SHUTDOWN_GRACE_MS: bad }).message,
        /DURABLE_FETCH_SHUTDOWN_GRACE_MS: /,
      );
    }
  });

  it('config: HTTP_MAX_RESPONSE_BYTES is a whole number of bytes in 1 KiB..1 GiB', () => {
    assert.equal(loadConfig({ HTTP_MAX_RESPONSE_BYTES: '1048576' }).http.maxResponseBytes, 1_048_576);
    assert.equal(loadConfig({ HTTP_MAX_RESPONSE_BYTES: '1024' }).http.maxResponseBytes, 1024);
    for (const bad of ['1023', '1073741825', '1.5', 'big']) {
      assert.match(configError({ HTTP_MAX_RESPONSE_BYTES: bad }).message, /HTTP_MAX_RESPONSE_BYTES: /, bad);
    }
  });

  it('config: DURABLE_FETCH_SWEEP_INTERVAL_MS is 0 (off) or at least a second', () => {
    assert.equal(loadConfig({ DURABLE_FETCH_SWEEP_INTERVAL_MS: '0' }).runs.sweepIntervalMs, 0);
    assert.equal(loadConfig({ DURABLE_FETCH_SWEEP_INTERVAL_MS: '1000' }).runs.sweepIntervalMs, 1000);
    for (const bad of ['-1', '999', '1.5', 'hourly']) {
      assert.match(
        configError({ DURABLE_FETCH_SWEEP_INTERVAL_MS: bad }).message,
        /DURABLE_FETCH_SWEEP_INTERVAL_MS: /,
      );
    }
  });

  it('config: DURABLE_FETCH_DOWNSTREAM_REFRESH_MS is 0 (at start only) or at least a second', () => {
    const refresh = (value: string) => loadConfig({ DURABLE_FETCH_DOWNSTREAM_REFRESH_MS: value });
    assert.equal(refresh('0').worker.downstreamRefreshMs, 0);
    assert.equal(refresh('2500').worker.downstreamRefreshMs, 2500);
    for (const bad of ['-1', '999', '1.5', 'often']) {
      assert.match(
        configError({ DURABLE_FETCH_DOWNSTREAM_REFRESH_MS: bad }).message,
        /DURABLE_FETCH_DOWNSTREAM_REFRESH_MS: /,
      );
    }
  });

  it('config: DURABLE_FETCH_WORKER_ACTIVITY_SLOTS is a whole number from 1 to 1000', () => {
    assert.equal(loadConfig({ DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: '7' }).worker.activitySlots, 7);
    for (const bad of ['0', '1001', '2.5', 'many']) {
      assert.match(
        configError({ DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: bad }).message,
        /DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: /,
      );
    }
  });

  it('config: without TEMPORAL_ADDRESS the local dev server is used, with its Web UI for links', () => {
    assert.equal(temporalAddress(loadConfig({})), '127.0.0.1:7233');
    const custom = loadConfig({
      TEMPORAL_PORT: '7300',
      TEMPORAL_UI_PORT: '8300',
      DURABLE_FETCH_TASK_QUEUE: 'q1',
    });
    assert.equal(temporalAddress(custom), '127.0.0.1:7300');
    assert.equal(custom.temporal.uiUrl, 'http://localhost:8300');
    assert.equal(custom.temporal.taskQueue, 'q1');
  });

  it('config: TEMPORAL_ADDRESS selects that cluster and drops the local Web UI link unless TEMPORAL_UI_URL is set', () => {
    const external = loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_NAMESPACE: 'prod' });
    assert.equal(temporalAddress(external), 'temporal.internal:7233');
    assert.equal(external.temporal.address, 'temporal.internal:7233');
    assert.equal(external.temporal.connection?.address, 'temporal.internal:7233');
    assert.equal(external.temporal.namespace, 'prod');
    assert.equal(external.temporal.uiUrl, undefined);
    const withUi = loadConfig({
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_UI_URL: 'https://ui.internal',
    });
    assert.equal(withUi.temporal.uiUrl, 'https://ui.internal');
  });

  it('config: partnerUrl joins the demo partner host and port', () => {
    assert.equal(partnerUrl(loadConfig({})), 'http://127.0.0.1:4010');
    assert.equal(
      partnerUrl(loadConfig({ PARTNER_HOST: '0.0.0.0', PARTNER_PORT: '4999' })),
      'http://0.0.0.0:4999',
    );
  });
});
