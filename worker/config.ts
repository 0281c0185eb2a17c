/**
 * The one place that reads process.env (STYLE 6). Validated with zod, returned as a typed object
 * and passed down; nothing else looks at the environment (except Temporal's own envconfig loader
 * for TEMPORAL_* connection settings, which follows Temporal's conventions).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';
import { z } from 'zod';
import { CRASH_POINTS, type CrashPoint } from '../activities/crash-points.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../activities/http.ts';
import { DEFAULT_MAX_INPUT_BYTES } from '../workflows/types.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { parseRoutes, type Route } from './outbox/sinks.ts';

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Default routing: run events to the webhook (the demo partner), start commands to Temporal. */
// Start commands to Temporal; every job's events (any topic) to the webhook.
export const DEFAULT_OUTBOX_ROUTES = 'temporal.start_workflow=temporal,*=webhook';

const port = z.coerce.number().int().min(0).max(65535);
const ms = z.coerce.number().int().positive();

const envSchema = z.object({
  DATABASE_URL: z
    .url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// or postgresql:// URL' })
    .optional(),
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_CLI_PATH: z.string().min(1).optional(),
  TEMPORAL_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  TEMPORAL_UI_URL: z.url().optional(),
  DURABLE_FETCH_TASK_QUEUE: z.string().min(1).default('durable-fetch'),
  DURABLE_FETCH_DATA_DIR: z.string().min(1).default('.data'),
  DURABLE_FETCH_PG_PORT: port.default(5433),
  DURABLE_FETCH_DB_NAME: z
    .string()
    .regex(/^[a-z_][a-z0-9_]*$/)
    .default('durable_fetch'),
  DURABLE_FETCH_MAX_FUTURE_DAYS: z.coerce.number().int().min(0).max(366).default(0),
  DURABLE_FETCH_LEASE_TTL_MS: ms.default(5 * 60_000),
  DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS: z.coerce.number().int().positive().default(30),
  DURABLE_FETCH_CLEANUP_INTERVAL_MS: z.coerce.number().int().min(0).default(600_000),
  DURABLE_FETCH_SWEEP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .refine((v) => v === 0 || v >= 1_000, 'must be 0 (off) or at least 1000 ms')
    .default(60_000),
  DURABLE_FETCH_MAX_INPUT_BYTES: z.coerce
    .number()
    .int()
    .min(256)
    .max(2_000_000)
    .default(DEFAULT_MAX_INPUT_BYTES),
  DURABLE_FETCH_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(20_000),
  DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: z.coerce.number().int().min(1).max(1_000).default(20),
  DURABLE_FETCH_WORKFLOW_BUNDLE: z.string().min(1).optional(),
  DURABLE_FETCH_METRICS_ENABLED: z.enum(['true', 'false']).default('true'),
  DURABLE_FETCH_METRICS_HOST: z.string().min(1).default('0.0.0.0'),
  DURABLE_FETCH_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  DURABLE_FETCH_METRICS_SAMPLE_MS: z.coerce.number().int().min(100).default(15_000),
  PARTNER_HOST: z.string().default('127.0.0.1'),
  PARTNER_PORT: port.default(4010),
  PARTNER_PAGE_LIMIT: z.coerce.number().int().min(1).max(500).default(50),
  PARTNER_LATE_EFFECT_MS: z.coerce.number().int().min(0).max(600_000).default(0),
  HTTP_CONNECT_TIMEOUT_MS: ms.default(5_000),
  HTTP_RESPONSE_TIMEOUT_MS: ms.default(15_000),
  HTTP_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(DEFAULT_MAX_RESPONSE_BYTES),
  DURABLE_FETCH_OUTBOX_ROUTES: z
    .string()
    .default(DEFAULT_OUTBOX_ROUTES)
    .transform((text, ctx) => {
      const routes = parseRoutes(text);
      if (!('problem' in routes)) return routes;
      ctx.addIssue({ code: 'custom', message: routes.problem });
      return z.NEVER;
    }),
  DURABLE_FETCH_OUTBOX_BATCH: z.coerce.number().int().min(1).max(10_000).default(200),
  DURABLE_FETCH_OUTBOX_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(32),
  DURABLE_FETCH_OUTBOX_LEASE_MS: z.coerce.number().int().min(1_000).default(30_000),
  DURABLE_FETCH_OUTBOX_POLL_MS: ms.default(100),
  DURABLE_FETCH_OUTBOX_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(1_000).default(12),
  DURABLE_FETCH_OUTBOX_BACKOFF_INITIAL_MS: ms.default(1_000),
  DURABLE_FETCH_OUTBOX_BACKOFF_MAX_MS: ms.default(5 * 60_000),
  DURABLE_FETCH_OUTBOX_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  DURABLE_FETCH_OUTBOX_RETENTION_DAYS: z.coerce.number().positive().default(7),
  DURABLE_FETCH_WEBHOOK_URL: z.url({ protocol: /^https?$/ }).optional(),
  DURABLE_FETCH_NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222'),
  DURABLE_FETCH_NATS_STREAM: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .default('DURABLE_FETCH'),
  DURABLE_FETCH_NATS_SUBJECT_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)
    .default('durable-fetch'),
  DURABLE_FETCH_NATS_DUPLICATE_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(15 * 60_000),
  /** Test-only (R12a): arm a crash point in this process; see activities/crash-points.ts. */
  DURABLE_FETCH_CRASH_POINT: z.enum(CRASH_POINTS).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Env = z.infer<typeof envSchema>;

export interface Config {
  projectRoot: string;
  dataDir: string;
  database: {
    /** Explicit DATABASE_URL, or undefined: then the embedded PostgreSQL is used. */
    url: string | undefined;
    embeddedPort: number;
    name: string;
  };
  temporal: {
    /** Explicit TEMPORAL_ADDRESS, or undefined: then a local dev server is used. */
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
  /** The `/metrics` endpoint and the health sampler of every process (issue #8). */
  metrics: { enabled: boolean; host: string; port: number; sampleMs: number };
  worker: {
    /** On SIGINT/SIGTERM, how long running activities may finish before they are cancelled (R9). */
    shutdownGraceMs: number;
    /** Activities a worker runs at once; its database pool is sized from it (worker/db.ts). */
    activitySlots: number;
    /**
     * A workflow bundle built ahead (`bundleWorkflowCode` with the worker's interceptor modules,
     * written to a file): the worker loads it instead of bundling the workflows at start, which
     * costs seconds of CPU per process. Unset: bundled at start.
     */
    workflowBundlePath?: string;
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
  // TEMPORAL_ADDRESS set: TLS, API key, profiles and namespace follow Temporal's own conventions.
  const external = e.TEMPORAL_ADDRESS
    ? loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> })
    : undefined;
  return {
    projectRoot: PROJECT_ROOT,
    dataDir: path.resolve(PROJECT_ROOT, e.DURABLE_FETCH_DATA_DIR),
    database: { url: e.DATABASE_URL, embeddedPort: e.DURABLE_FETCH_PG_PORT, name: e.DURABLE_FETCH_DB_NAME },
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      connection: external?.connectionOptions,
      namespace: external?.namespace ?? e.TEMPORAL_NAMESPACE,
      cliPath: e.TEMPORAL_CLI_PATH,
      port: e.TEMPORAL_PORT,
      uiPort: e.TEMPORAL_UI_PORT,
      uiUrl: e.TEMPORAL_UI_URL ?? (e.TEMPORAL_ADDRESS ? undefined : `http://localhost:${e.TEMPORAL_UI_PORT}`),
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
      ...(e.DURABLE_FETCH_WORKFLOW_BUNDLE === undefined
        ? {}
        : { workflowBundlePath: e.DURABLE_FETCH_WORKFLOW_BUNDLE }),
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

/** The Temporal address the app uses: TEMPORAL_ADDRESS, else the local dev server's. */
export function temporalAddress(config: Config): string {
  return config.temporal.address ?? `127.0.0.1:${config.temporal.port}`;
}

/** URL of the demo partner API. */
export function partnerUrl(config: Config): string {
  return `http://${config.partner.host}:${config.partner.port}`;
}
