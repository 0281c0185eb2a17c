/**
 * The one place that reads process.env. Validated with zod (the variables of each area are in
 * runtime/config-env.ts), returned as a typed object and passed down; nothing else looks at the
 * environment (except Temporal's own envconfig loader for TEMPORAL_* connection settings, which
 * follows Temporal's conventions).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Envconfig from '@temporalio/envconfig';
import type { ClientConnectConfig } from '@temporalio/envconfig';
import type { CrashPoint } from './crash-points.ts';
import { UserFacingError } from './errors.ts';
import { type Env, envSchema } from './config-env.ts';
import type { Route } from '../contract/outbox-routes.ts';

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export { DEFAULT_OUTBOX_ROUTES, type Env } from './config-env.ts';

export interface Config {
  projectRoot: string;
  dataDir: string;
  database: {
    /** Explicit DATABASE_URL, or undefined: then the embedded PostgreSQL is used. */
    url: string | undefined;
    embeddedPort: number;
    name: string;
    /**
     * DIRECT_DATABASE_URL: PostgreSQL itself (or a session pool) for migrations, when `url` goes
     * through a transaction pooler.
     */
    directUrl: string | undefined;
    /** Each connection prepares a statement once (db/client.ts `ClientOptions`). */
    preparedStatements: boolean;
    /** What is between the processes and PostgreSQL (db/connection.ts `Pooling`). */
    pooling: 'session' | 'transaction';
  };
  temporal: {
    /**
     * TEMPORAL_ADDRESS, or the address of the envconfig profile TEMPORAL_PROFILE /
     * TEMPORAL_CONFIG_FILE name; undefined: then a local dev server is used.
     */
    address: string | undefined;
    /** Connection options from Temporal's envconfig (TLS, API key, profile) when address is set. */
    connection: ClientConnectConfig['connectionOptions'] | undefined;
    namespace: string;
    cliPath: string | undefined;
    port: number;
    uiPort: number;
    /** Web UI base URL for links: TEMPORAL_UI_URL, else the local dev server's UI. */
    uiUrl: string | undefined;
    taskQueue: string;
  };
  /**
   * The demo partner of `npm start`: where it listens, the page size asked of it, and how long after
   * a client gave up it still applies a held submission (its late effects; 0 = never).
   */
  partner: { host: string; port: number; pageLimit: number; lateEffectMs: number };
  http: {
    connectTimeoutMs: number;
    responseTimeoutMs: number;
    /** Largest response body any HTTP client reads (partner pages, submissions, webhook answers). */
    maxResponseBytes: number;
  };
  runs: {
    maxFutureDays: number;
    leaseTtlMs: number;
    idempotencyRetentionMs: number;
    /** Workers delete expired idempotency records and staged pages this often; 0 = never. */
    cleanupIntervalMs: number;
    /**
     * Workers settle stuck runs (workflow closed, row still `running`, lease run out) this often;
     * 0 = never (`durable-fetch reconcile --stuck` does it by hand).
     */
    sweepIntervalMs: number;
    /** Largest workflow input a start may send (R12d). */
    maxInputBytes: number;
  };
  /** The `/metrics` endpoint and the health sampler of every process. */
  metrics: { enabled: boolean; host: string; port: number; sampleMs: number };
  worker: {
    /** On SIGINT/SIGTERM, how long running activities may finish before they are cancelled (R9). */
    shutdownGraceMs: number;
    /** Activities a worker runs at once; its database pool is sized from it (worker/pool-size.ts). */
    activitySlots: number;
    /** Workflow executions a worker keeps in memory between their tasks (Temporal's sticky cache). */
    cachedWorkflows: number;
    /**
     * How often a worker reads the downstreams again to poll the task queues of new ones (and apply
     * their Temporal limits); 0 = at start only (R8).
     */
    downstreamRefreshMs: number;
    /**
     * A workflow bundle built ahead (`bundleWorkflowCode` with the worker's interceptor modules,
     * written to a file): the worker loads it instead of bundling the workflows at start, which
     * costs seconds of CPU per process. Unset: bundled at start.
     */
    workflowBundlePath?: string;
    /**
     * DURABLE_FETCH_BUILD_ID: the build id the worker stamps on the workflow tasks it completes;
     * unset: worker/build-version.ts derives it from the package version and git commit.
     */
    buildId?: string;
  };
  outbox: {
    routes: Route[];
    batchSize: number;
    concurrency: number;
    leaseMs: number;
    pollMs: number;
    maxAttempts: number;
    backoff: { initialMs: number; coefficient: number; maximumMs: number };
    graceMs: number;
    retentionMs: number;
    /** Webhook sink target: DURABLE_FETCH_WEBHOOK_URL, else the demo partner's `/events`. */
    webhookUrl: string;
    nats: { servers: string; stream: string; subjectPrefix: string; duplicateWindowMs: number };
  };
  logLevel: Env['LOG_LEVEL'];
  /** Test-only: the armed crash point, if any. */
  crashPoint: CrashPoint | undefined;
}

/**
 * Temporal's envconfig loader, required only when TEMPORAL_ADDRESS is set: loading it (with the
 * part of the Temporal SDK it uses) is a cost every command would otherwise pay at start, even one
 * that never talks to Temporal, such as `runs list`.
 */
function envconfig(): typeof Envconfig {
  return createRequire(import.meta.url)('@temporalio/envconfig') as typeof Envconfig;
}

/**
 * Temporal's client settings as its envconfig reads them (TEMPORAL_* variables over the profile
 * TEMPORAL_PROFILE of TEMPORAL_CONFIG_FILE), files loaded.
 * @throws UserFacingError when the file, the profile or a file it names cannot be read, or no
 * address is set; the message keeps only the first line of the reader's, since a TOML parser
 * quotes the offending line, which may hold an API key.
 */
function temporalProfile(env: NodeJS.ProcessEnv): ClientConnectConfig {
  const file = env.TEMPORAL_CONFIG_FILE;
  // envconfig takes a missing file for an empty one: a mistyped path would go unnoticed.
  if (file && !existsSync(file)) {
    throw new UserFacingError(`TEMPORAL_CONFIG_FILE names no file: ${file}`, 'INVALID_CONFIG');
  }
  let loaded: ClientConnectConfig;
  try {
    loaded = envconfig().loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
  } catch (err) {
    const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new UserFacingError(
      `cannot read Temporal's client settings: ${reason}; check TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE ` +
        'and the TEMPORAL_TLS_* paths',
      'INVALID_CONFIG',
      { cause: err },
    );
  }
  if (!loaded.connectionOptions.address) {
    throw new UserFacingError(
      `no Temporal address: set TEMPORAL_ADDRESS, or address in profile "${env.TEMPORAL_PROFILE ?? 'default'}" ` +
        'of TEMPORAL_CONFIG_FILE',
      'INVALID_CONFIG',
    );
  }
  return loaded;
}

/**
 * Reads and validates the environment.
 * @throws UserFacingError naming every invalid variable (values are not echoed: they may be secret).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means "unset" (a shell's `FOO=`), not zero or an empty address.
  const parsed = envSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new UserFacingError(`invalid configuration: ${problems}`, 'INVALID_CONFIG');
  }
  const e = parsed.data;
  // TEMPORAL_ADDRESS or a profile named: TLS, API key, profiles and namespace follow Temporal's own
  // conventions.
  const external =
    e.TEMPORAL_ADDRESS || e.TEMPORAL_PROFILE || e.TEMPORAL_CONFIG_FILE ? temporalProfile(env) : undefined;
  return {
    projectRoot: PROJECT_ROOT,
    dataDir: path.resolve(PROJECT_ROOT, e.DURABLE_FETCH_DATA_DIR),
    database: {
      url: e.DATABASE_URL,
      embeddedPort: e.DURABLE_FETCH_PG_PORT,
      name: e.DURABLE_FETCH_DB_NAME,
      directUrl: e.DIRECT_DATABASE_URL,
      preparedStatements: e.DURABLE_FETCH_DB_PREPARED_STATEMENTS === 'true',
      pooling: e.DURABLE_FETCH_DB_POOLING,
    },
    temporal: {
      address: external?.connectionOptions.address,
      connection: external?.connectionOptions,
      namespace: external?.namespace ?? e.TEMPORAL_NAMESPACE,
      cliPath: e.TEMPORAL_CLI_PATH,
      port: e.TEMPORAL_PORT,
      uiPort: e.TEMPORAL_UI_PORT,
      uiUrl: e.TEMPORAL_UI_URL ?? (external ? undefined : `http://localhost:${e.TEMPORAL_UI_PORT}`),
      taskQueue: e.DURABLE_FETCH_TASK_QUEUE,
    },
    partner: {
      host: e.PARTNER_HOST,
      port: e.PARTNER_PORT,
      pageLimit: e.PARTNER_PAGE_LIMIT,
      lateEffectMs: e.PARTNER_LATE_EFFECT_MS,
    },
    http: {
      connectTimeoutMs: e.HTTP_CONNECT_TIMEOUT_MS,
      responseTimeoutMs: e.HTTP_RESPONSE_TIMEOUT_MS,
      maxResponseBytes: e.HTTP_MAX_RESPONSE_BYTES,
    },
    runs: {
      maxFutureDays: e.DURABLE_FETCH_MAX_FUTURE_DAYS,
      leaseTtlMs: e.DURABLE_FETCH_LEASE_TTL_MS,
      idempotencyRetentionMs: e.DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS * 86_400_000,
      cleanupIntervalMs: e.DURABLE_FETCH_CLEANUP_INTERVAL_MS,
      sweepIntervalMs: e.DURABLE_FETCH_SWEEP_INTERVAL_MS,
      maxInputBytes: e.DURABLE_FETCH_MAX_INPUT_BYTES,
    },
    metrics: {
      enabled: e.DURABLE_FETCH_METRICS_ENABLED === 'true',
      host: e.DURABLE_FETCH_METRICS_HOST,
      port: e.DURABLE_FETCH_METRICS_PORT,
      sampleMs: e.DURABLE_FETCH_METRICS_SAMPLE_MS,
    },
    worker: {
      shutdownGraceMs: e.DURABLE_FETCH_SHUTDOWN_GRACE_MS,
      activitySlots: e.DURABLE_FETCH_WORKER_ACTIVITY_SLOTS,
      cachedWorkflows: e.DURABLE_FETCH_WORKER_CACHED_WORKFLOWS,
      downstreamRefreshMs: e.DURABLE_FETCH_DOWNSTREAM_REFRESH_MS,
      ...(e.DURABLE_FETCH_WORKFLOW_BUNDLE === undefined
        ? {}
        : { workflowBundlePath: e.DURABLE_FETCH_WORKFLOW_BUNDLE }),
      ...(e.DURABLE_FETCH_BUILD_ID === undefined ? {} : { buildId: e.DURABLE_FETCH_BUILD_ID }),
    },
    outbox: {
      routes: e.DURABLE_FETCH_OUTBOX_ROUTES,
      batchSize: e.DURABLE_FETCH_OUTBOX_BATCH,
      concurrency: e.DURABLE_FETCH_OUTBOX_CONCURRENCY,
      leaseMs: e.DURABLE_FETCH_OUTBOX_LEASE_MS,
      pollMs: e.DURABLE_FETCH_OUTBOX_POLL_MS,
      maxAttempts: e.DURABLE_FETCH_OUTBOX_MAX_ATTEMPTS,
      backoff: {
        initialMs: e.DURABLE_FETCH_OUTBOX_BACKOFF_INITIAL_MS,
        coefficient: 2,
        maximumMs: e.DURABLE_FETCH_OUTBOX_BACKOFF_MAX_MS,
      },
      graceMs: e.DURABLE_FETCH_OUTBOX_GRACE_MS,
      retentionMs: e.DURABLE_FETCH_OUTBOX_RETENTION_DAYS * 86_400_000,
      webhookUrl: e.DURABLE_FETCH_WEBHOOK_URL ?? `http://${e.PARTNER_HOST}:${e.PARTNER_PORT}/events`,
      nats: {
        servers: e.DURABLE_FETCH_NATS_URL,
        stream: e.DURABLE_FETCH_NATS_STREAM,
        subjectPrefix: e.DURABLE_FETCH_NATS_SUBJECT_PREFIX,
        duplicateWindowMs: e.DURABLE_FETCH_NATS_DUPLICATE_WINDOW_MS,
      },
    },
    logLevel: e.LOG_LEVEL,
    crashPoint: e.DURABLE_FETCH_CRASH_POINT,
  };
}

/** Credentials of the embedded PostgreSQL: local-only, on a loopback port. */
export const EMBEDDED_PG = { user: 'postgres', password: 'postgres' } as const;

/** The database URL the app uses: DATABASE_URL, else the embedded server's (started by `npm start`). */
export function databaseUrl(config: Config): string {
  if (config.database.url) return config.database.url;
  const { user, password } = EMBEDDED_PG;
  return `postgres://${user}:${password}@127.0.0.1:${config.database.embeddedPort}/${config.database.name}`;
}

/**
 * The database URL migrations use: DIRECT_DATABASE_URL, else {@link databaseUrl}. The migrator
 * holds a session-level advisory lock and session settings across its transactions, which a
 * transaction pooler cannot keep.
 * @throws UserFacingError behind a transaction pooler (DURABLE_FETCH_DB_POOLING=transaction)
 * without DIRECT_DATABASE_URL.
 */
export function migrationUrl(config: Config): string {
  if (config.database.directUrl) return config.database.directUrl;
  if (config.database.pooling === 'transaction') {
    throw new UserFacingError(
      'migrations need a session of their own (a session-level advisory lock), which DURABLE_FETCH_DB_POOLING=transaction cannot give: set DIRECT_DATABASE_URL to PostgreSQL itself or to a session-mode pool',
      'DB_DIRECT_URL_MISSING',
    );
  }
  return databaseUrl(config);
}

/** The Temporal address the app uses: TEMPORAL_ADDRESS, else the local dev server's. */
export function temporalAddress(config: Config): string {
  return config.temporal.address ?? `127.0.0.1:${config.temporal.port}`;
}

/** URL of the demo partner API. */
export function partnerUrl(config: Config): string {
  return `http://${config.partner.host}:${config.partner.port}`;
}
