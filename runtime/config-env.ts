/**
 * The environment variables durable-fetch reads, one zod schema per area (services, runs, the
 * worker and metrics, the partner and HTTP, the outbox), merged into {@link envSchema}. Only
 * runtime/config.ts parses it: the rest of the code gets the typed `Config` it builds.
 *
 * Written with zod/mini, whose functions a bundler keeps only when used: every command loads this
 * module at start, and the CLI's build of full zod is several times the size (and start-up time).
 */
import en from 'zod/v4/locales/en.js';
import * as z from 'zod/mini';
import { CRASH_POINTS } from './crash-points.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../contract/http-limits.ts';
import { DEFAULT_MAX_INPUT_BYTES } from '../contract/types.ts';
import { parseRoutes } from '../contract/outbox-routes.ts';

/** Default routing: start commands to Temporal; every job's events (any topic) to the webhook. */
export const DEFAULT_OUTBOX_ROUTES = 'temporal.start_workflow=temporal,*=webhook';

// zod/mini names its problems only with a locale; the messages are English zod's.
z.config(en());

/** A whole number from its string form, at least `min` and at most `max` when given. */
function int(min?: number, max?: number) {
  return z.coerce
    .number()
    .check(
      z.int(),
      ...(min === undefined ? [] : [z.minimum(min)]),
      ...(max === undefined ? [] : [z.maximum(max)]),
    );
}

/** A non-empty string. */
const text = () => z.string().check(z.minLength(1));

const port = int(0, 65535);
/** A whole number above 0. */
const positive = z.coerce.number().check(z.int(), z.positive());
const ms = positive;

/** 0 (off), or at least a second: `off` says what 0 means. */
const zeroOrSecond = (off: string) =>
  int().check(z.refine((v) => v === 0 || v >= 1_000, `must be 0 (${off}) or at least 1000 ms`));

/** Where PostgreSQL and Temporal are (unset: the embedded ones of `npm start`), and local state. */
const servicesEnv = z.object({
  DATABASE_URL: z.optional(
    z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// or postgresql:// URL' }),
  ),
  // PostgreSQL itself (or a session pool), for migrations, when DATABASE_URL goes through a
  // transaction pooler: Prisma's `directUrl` under the name Prisma's documentation uses.
  DIRECT_DATABASE_URL: z.optional(
    z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// or postgresql:// URL' }),
  ),
  TEMPORAL_ADDRESS: z.optional(text()),
  // Read by Temporal's envconfig (runtime/config.ts); here because naming one selects that cluster.
  TEMPORAL_PROFILE: z.optional(text()),
  TEMPORAL_CONFIG_FILE: z.optional(text()),
  TEMPORAL_NAMESPACE: z._default(text(), 'default'),
  TEMPORAL_CLI_PATH: z.optional(text()),
  TEMPORAL_PORT: z._default(port, 7233),
  TEMPORAL_UI_PORT: z._default(port, 8233),
  TEMPORAL_UI_URL: z.optional(z.url()),
  DURABLE_FETCH_TASK_QUEUE: z._default(text(), 'durable-fetch'),
  DURABLE_FETCH_DATA_DIR: z._default(text(), '.data'),
  DURABLE_FETCH_PG_PORT: z._default(port, 5433),
  DURABLE_FETCH_DB_NAME: z._default(z.string().check(z.regex(/^[a-z_][a-z0-9_]*$/)), 'durable_fetch'),
  DURABLE_FETCH_DB_PREPARED_STATEMENTS: z._default(z.enum(['true', 'false']), 'true'),
  DURABLE_FETCH_DB_POOLING: z._default(z.enum(['session', 'transaction']), 'session'),
});

/** How runs are started, leased, swept and cleaned up. */
const runsEnv = z.object({
  DURABLE_FETCH_MAX_FUTURE_DAYS: z._default(int(0, 366), 0),
  DURABLE_FETCH_LEASE_TTL_MS: z._default(ms, 5 * 60_000),
  DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS: z._default(positive, 30),
  DURABLE_FETCH_CLEANUP_INTERVAL_MS: z._default(int(0), 600_000),
  DURABLE_FETCH_SWEEP_INTERVAL_MS: z._default(zeroOrSecond('off'), 60_000),
  DURABLE_FETCH_MAX_INPUT_BYTES: z._default(int(256, 2_000_000), DEFAULT_MAX_INPUT_BYTES),
});

/** The worker process: shutdown, capacity, its workflow code and build, its metrics endpoint. */
const workerEnv = z.object({
  DURABLE_FETCH_SHUTDOWN_GRACE_MS: z._default(int(0), 20_000),
  DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: z._default(int(1, 1_000), 20),
  // Bounds the worker's memory whatever the backlog: a run's history is short, so an evicted run
  // costs little to take up again.
  DURABLE_FETCH_WORKER_CACHED_WORKFLOWS: z._default(int(2, 100_000), 250),
  DURABLE_FETCH_DOWNSTREAM_REFRESH_MS: z._default(zeroOrSecond('read at start only'), 10_000),
  DURABLE_FETCH_WORKFLOW_BUNDLE: z.optional(text()),
  // Temporal records it on every workflow task the worker completes (at most 255 characters).
  DURABLE_FETCH_BUILD_ID: z.optional(
    z
      .string()
      .check(z.regex(/^[\x21-\x7e]{1,255}$/, 'must be 1-255 printable ASCII characters without spaces')),
  ),
  DURABLE_FETCH_METRICS_ENABLED: z._default(z.enum(['true', 'false']), 'true'),
  DURABLE_FETCH_METRICS_HOST: z._default(text(), '0.0.0.0'),
  DURABLE_FETCH_METRICS_PORT: z._default(int(0, 65535), 9464),
  DURABLE_FETCH_METRICS_SAMPLE_MS: z._default(int(100), 15_000),
  /** Test-only (R12a): arm a crash point in this process; see runtime/crash-points.ts. */
  DURABLE_FETCH_CRASH_POINT: z.optional(z.enum(CRASH_POINTS)),
  LOG_LEVEL: z._default(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
});

/** The demo partner of `npm start`, and the limits of every HTTP client. */
const httpEnv = z.object({
  PARTNER_HOST: z._default(z.string(), '127.0.0.1'),
  PARTNER_PORT: z._default(port, 4010),
  PARTNER_PAGE_LIMIT: z._default(int(1, 500), 50),
  PARTNER_LATE_EFFECT_MS: z._default(int(0, 600_000), 0),
  HTTP_CONNECT_TIMEOUT_MS: z._default(ms, 5_000),
  HTTP_RESPONSE_TIMEOUT_MS: z._default(ms, 15_000),
  HTTP_MAX_RESPONSE_BYTES: z._default(int(1024, 1024 * 1024 * 1024), DEFAULT_MAX_RESPONSE_BYTES),
});

/** The outbox publisher: routing, batching, retries, retention, and the NATS sink. */
const outboxEnv = z.object({
  DURABLE_FETCH_OUTBOX_ROUTES: z.pipe(
    z._default(z.string(), DEFAULT_OUTBOX_ROUTES),
    z.transform((routesText: string, payload) => {
      const routes = parseRoutes(routesText);
      if (!('problem' in routes)) return routes;
      payload.issues.push({ code: 'custom', message: routes.problem, input: routesText });
      return z.NEVER;
    }),
  ),
  DURABLE_FETCH_OUTBOX_BATCH: z._default(int(1, 10_000), 200),
  DURABLE_FETCH_OUTBOX_CONCURRENCY: z._default(int(1, 1_000), 32),
  DURABLE_FETCH_OUTBOX_LEASE_MS: z._default(int(1_000), 30_000),
  DURABLE_FETCH_OUTBOX_POLL_MS: z._default(ms, 100),
  DURABLE_FETCH_OUTBOX_MAX_ATTEMPTS: z._default(int(1, 1_000), 12),
  DURABLE_FETCH_OUTBOX_BACKOFF_INITIAL_MS: z._default(ms, 1_000),
  DURABLE_FETCH_OUTBOX_BACKOFF_MAX_MS: z._default(ms, 5 * 60_000),
  DURABLE_FETCH_OUTBOX_GRACE_MS: z._default(int(0), 10_000),
  DURABLE_FETCH_OUTBOX_RETENTION_DAYS: z._default(z.coerce.number().check(z.positive()), 7),
  DURABLE_FETCH_WEBHOOK_URL: z.optional(z.url({ protocol: /^https?$/ })),
  DURABLE_FETCH_NATS_URL: z._default(text(), 'nats://127.0.0.1:4222'),
  DURABLE_FETCH_NATS_STREAM: z._default(z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/)), 'DURABLE_FETCH'),
  DURABLE_FETCH_NATS_SUBJECT_PREFIX: z._default(
    z.string().check(z.regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)),
    'durable-fetch',
  ),
  DURABLE_FETCH_NATS_DUPLICATE_WINDOW_MS: z._default(int(1_000), 15 * 60_000),
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
