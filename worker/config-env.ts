/**
 * The environment variables durable-fetch reads, one zod schema per area (services, runs, the
 * worker and metrics, the partner and HTTP, the outbox), merged into {@link envSchema}. Only
 * worker/config.ts parses it: the rest of the code gets the typed `Config` it builds.
 */
import { z } from 'zod';
import { CRASH_POINTS } from '../activities/crash-points.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../activities/http-limits.ts';
import { DEFAULT_MAX_INPUT_BYTES } from '../workflows/types.ts';
import { parseRoutes } from './outbox/sinks.ts';

/** Default routing: start commands to Temporal; every job's events (any topic) to the webhook. */
export const DEFAULT_OUTBOX_ROUTES = 'temporal.start_workflow=temporal,*=webhook';

const port = z.coerce.number().int().min(0).max(65535);
const ms = z.coerce.number().int().positive();

/** Where PostgreSQL and Temporal are (unset: the embedded ones of `npm start`), and local state. */
const servicesEnv = z.object({
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
});

/** How runs are started, leased, swept and cleaned up. */
const runsEnv = z.object({
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
});

/** The worker process: shutdown, capacity, its workflow code and build, its metrics endpoint. */
const workerEnv = z.object({
  DURABLE_FETCH_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(20_000),
  DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: z.coerce.number().int().min(1).max(1_000).default(20),
  // Bounds the worker's memory whatever the backlog: a run's history is short, so an evicted run
  // costs little to take up again.
  DURABLE_FETCH_WORKER_CACHED_WORKFLOWS: z.coerce.number().int().min(2).max(100_000).default(250),
  DURABLE_FETCH_DOWNSTREAM_REFRESH_MS: z.coerce
    .number()
    .int()
    .refine((v) => v === 0 || v >= 1_000, 'must be 0 (read at start only) or at least 1000 ms')
    .default(10_000),
  DURABLE_FETCH_WORKFLOW_BUNDLE: z.string().min(1).optional(),
  // Temporal records it on every workflow task the worker completes (at most 255 characters).
  DURABLE_FETCH_BUILD_ID: z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, 'must be 1-255 printable ASCII characters without spaces')
    .optional(),
  DURABLE_FETCH_METRICS_ENABLED: z.enum(['true', 'false']).default('true'),
  DURABLE_FETCH_METRICS_HOST: z.string().min(1).default('0.0.0.0'),
  DURABLE_FETCH_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  DURABLE_FETCH_METRICS_SAMPLE_MS: z.coerce.number().int().min(100).default(15_000),
  /** Test-only (R12a): arm a crash point in this process; see activities/crash-points.ts. */
  DURABLE_FETCH_CRASH_POINT: z.enum(CRASH_POINTS).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** The demo partner of `npm start`, and the limits of every HTTP client. */
const httpEnv = z.object({
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
});

/** The outbox publisher: routing, batching, retries, retention, and the NATS sink. */
const outboxEnv = z.object({
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
});

/** Every variable, validated together so that one error message names all the bad ones. */
export const envSchema = z.object({
  ...servicesEnv.shape,
  ...runsEnv.shape,
  ...workerEnv.shape,
  ...httpEnv.shape,
  ...outboxEnv.shape,
});

export type Env = z.infer<typeof envSchema>;
