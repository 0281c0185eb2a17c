/**
 * A downstream's settings (R8): the rules every input that sets them goes through (the sources
 * file's `downstreams`), their defaults, and the read the activities use. A downstream that has no
 * row (a source names it, the file does not list it) runs on the defaults, on the shared queue.
 */
import { z } from 'zod';
import type { Downstream, Prisma, PrismaClient } from '../../prisma/generated/client.ts';

/** The name of a downstream (`source.downstream`). */
export const DOWNSTREAM_ID_RE = /^[a-z][a-z0-9_-]{0,62}$/;

/** The downstream of a source that names none (the column default). */
export const DEFAULT_DOWNSTREAM = 'default';

// Messages leave the setting's name to the caller: a problem line starts with its path.
const ms = (min: number, max: number) =>
  z
    .number()
    .int('expected a whole number of milliseconds')
    .min(min, `must be at least ${min} ms`)
    .max(max, `must be at most ${max} ms`);
const count = (min: number, max: number) =>
  z
    .number()
    .int('expected a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);
const share = () =>
  z
    .number()
    .gt(0, 'must be above 0 (a share of the calls)')
    .max(1, 'must be at most 1 (a share of the calls)');
const perSecond = () =>
  z.number().gt(0, 'must be above 0 (leave it out for no limit)').max(100_000, 'must be at most 100000');

/** How a downstream's breaker opens and recovers. Defaults: 50 % over 20 calls in a minute, 30 s open. */
export const breakerSchema = z.strictObject({
  failureRate: share()
    .default(0.5)
    .describe('It opens when this share of the calls in the window failed (0..1].'),
  minCalls: count(1, 100_000).default(20).describe('…and the window holds at least this many calls.'),
  windowMs: ms(1_000, 3_600_000).default(60_000).describe("The breaker's sliding window (ms)."),
  openMs: ms(100, 3_600_000).default(30_000).describe('How long it stays open before trial calls (ms).'),
  trialCalls: count(1, 100).default(3).describe('How many trial calls go out at once when half-open.'),
});

/** How many retries a downstream receives. Default: 20 % of the calls of a minute, at least 10. */
export const retryBudgetSchema = z.strictObject({
  ratio: share().default(0.2).describe('Retries are at most this share of the calls.'),
  minRetries: count(1, 100_000)
    .default(10)
    .describe(
      '…or this many per window, whichever is more (at least 1: with none, retries after an outage would wait for first attempts that may never come).',
    ),
  windowMs: ms(1_000, 3_600_000).default(60_000).describe("The budget's sliding window (ms)."),
});

/** One downstream of a sources file. */
export const downstreamSettingsSchema = z
  .strictObject({
    id: z
      .string()
      .regex(DOWNSTREAM_ID_RE, "expected a name of 1..63 a-z, 0-9, '-' and '_'")
      .describe('The name sources give as `downstream`.'),
    isolated: z
      .boolean()
      .default(false)
      .describe('Its partner calls go to a task queue of their own, with their own worker slots.'),
    maxConcurrentCalls: count(1, 1_000)
      .default(10)
      .describe('Worker slots of its task queue, per worker process (isolated downstreams).'),
    callsPerSecond: perSecond()
      .optional()
      .describe("Temporal's server-side limit on its partner calls, across every worker (isolated)."),
    sourceCallsPerSecond: perSecond()
      .optional()
      .describe('The same limit per source (fairness key) on its task queue (isolated).'),
    sourceWeights: z
      .record(
        z.string(),
        z.number().gt(0, 'a weight must be above 0').max(1_000, 'a weight must be at most 1000'),
      )
      .default({})
      .describe("Sources' fair shares of its task queue (source id → weight, default 1)."),
    breaker: breakerSchema.default(breakerSchema.parse({})),
    retryBudget: retryBudgetSchema.default(retryBudgetSchema.parse({})),
  })
  .superRefine((d, ctx) => {
    // Temporal's limits are put on the downstream's own queue: on the shared one they would bind
    // every other downstream too, so a limit there would be stored and never applied.
    for (const key of ['callsPerSecond', 'sourceCallsPerSecond'] as const) {
      if (!d.isolated && d[key] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message:
            'applies only to an isolated downstream (a task queue of its own): set isolated: true, or leave it out',
        });
      }
    }
  });

export type DownstreamSettings = z.output<typeof downstreamSettingsSchema>;
export type DownstreamSettingsInput = z.input<typeof downstreamSettingsSchema>;

/** The settings of a downstream without a row. */
export function defaultSettings(id: string): DownstreamSettings {
  return downstreamSettingsSchema.parse({ id });
}

/** The row's columns of `settings`. */
export function rowOf(settings: DownstreamSettings): Omit<Prisma.DownstreamCreateInput, 'id'> {
  const { breaker: b, retryBudget: r } = settings;
  return {
    isolated: settings.isolated,
    maxConcurrentCalls: settings.maxConcurrentCalls,
    callsPerSecond: settings.callsPerSecond ?? null,
    sourceCallsPerSecond: settings.sourceCallsPerSecond ?? null,
    sourceWeights: settings.sourceWeights,
    breakerFailureRate: b.failureRate,
    breakerMinCalls: b.minCalls,
    breakerWindowMs: b.windowMs,
    breakerOpenMs: b.openMs,
    breakerTrialCalls: b.trialCalls,
    retryBudgetRatio: r.ratio,
    retryBudgetMinRetries: r.minRetries,
    retryBudgetWindowMs: r.windowMs,
  };
}

/**
 * The settings a row holds, checked by the same rules as a file's: a row changed behind the
 * project's back (by SQL) fails every read of it, naming the setting, instead of running on it.
 * @throws Error `downstream '<id>' in the database: <setting>: <problem>`.
 */
export function settingsOf(row: Downstream): DownstreamSettings {
  const parsed = downstreamSettingsSchema.safeParse({
    id: row.id,
    isolated: row.isolated,
    maxConcurrentCalls: row.maxConcurrentCalls,
    ...(row.callsPerSecond === null ? {} : { callsPerSecond: row.callsPerSecond }),
    ...(row.sourceCallsPerSecond === null ? {} : { sourceCallsPerSecond: row.sourceCallsPerSecond }),
    sourceWeights: row.sourceWeights,
    breaker: {
      failureRate: row.breakerFailureRate,
      minCalls: row.breakerMinCalls,
      windowMs: row.breakerWindowMs,
      openMs: row.breakerOpenMs,
      trialCalls: row.breakerTrialCalls,
    },
    retryBudget: {
      ratio: row.retryBudgetRatio,
      minRetries: row.retryBudgetMinRetries,
      windowMs: row.retryBudgetWindowMs,
    },
  });
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  throw new Error(`downstream '${row.id}' in the database: ${problems.join('; ')}`);
}

/** The settings of downstream `id`: its row's, or the defaults. */
export async function findDownstream(
  db: Pick<PrismaClient, 'downstream'>,
  id: string,
): Promise<DownstreamSettings> {
  const row = await db.downstream.findUnique({ where: { id } });
  return row ? settingsOf(row) : defaultSettings(id);
}

/** Every downstream with a row, by id. */
export async function listDownstreams(db: Pick<PrismaClient, 'downstream'>): Promise<DownstreamSettings[]> {
  const rows = await db.downstream.findMany({ orderBy: { id: 'asc' } });
  return rows.map(settingsOf);
}

/**
 * Every downstream with a row; with `lock` (inside a transaction that changes them), locked
 * first in id order, so that what it read holds until that transaction ends.
 */
export async function readDownstreamRows(
  db: Prisma.TransactionClient,
  opts: { lock: boolean },
): Promise<DownstreamSettings[]> {
  if (opts.lock) await db.$executeRaw`SELECT 1 FROM downstream ORDER BY id FOR UPDATE`;
  return listDownstreams(db);
}

/**
 * Settings read through a short-lived cache: partner calls read them on every call, and they
 * change only when a sources file is applied, so a worker sees a change within `ttlMs`.
 */
export function cachedDownstreams(db: Pick<PrismaClient, 'downstream'>, ttlMs = 5_000) {
  const cache = new Map<string, { at: number; settings: Promise<DownstreamSettings> }>();
  return (id: string, now = Date.now()): Promise<DownstreamSettings> => {
    const hit = cache.get(id);
    if (hit && now - hit.at < ttlMs) return hit.settings;
    const settings = findDownstream(db, id);
    cache.set(id, { at: now, settings });
    // A failed read is not kept: the next call reads again.
    settings.catch(() => cache.delete(id));
    return settings;
  };
}

/**
 * The breaker a source's calls go through: its downstream's — except for a source that names
 * none (`default`), which gets one of its own, `default.<source id>`, with the default
 * downstream's settings: unrelated partners that were never told apart must not open each
 * other's breaker.
 */
export function breakerScope(settings: DownstreamSettings, sourceId: string): DownstreamSettings {
  return settings.id === DEFAULT_DOWNSTREAM
    ? { ...settings, id: `${DEFAULT_DOWNSTREAM}.${sourceId}` }
    : settings;
}

/** The source of a breaker name `default.<source id>` ({@link breakerScope}); else undefined. */
export function defaultSourceOf(breaker: string): string | undefined {
  const prefix = `${DEFAULT_DOWNSTREAM}.`;
  return breaker.startsWith(prefix) ? breaker.slice(prefix.length) : undefined;
}

/** The task queue of an isolated downstream's partner calls, on the deployment's `taskQueue`. */
export function downstreamTaskQueue(taskQueue: string, downstream: string): string {
  return `${taskQueue}-ds-${downstream}`;
}

/** An isolated downstream and the task queue of its partner calls. */
export interface IsolatedQueue {
  downstream: string;
  taskQueue: string;
}

/**
 * The task queues of the downstreams isolated now, on the deployment's `taskQueue`, by downstream
 * id: what `status` and the health sampler watch beside the deployment's own queue. One statement;
 * reads only ids, so a row the settings' rules refuse still has its queue watched.
 */
export async function listIsolatedQueues(
  db: Pick<PrismaClient, 'downstream'>,
  taskQueue: string,
): Promise<IsolatedQueue[]> {
  const rows = await db.downstream.findMany({
    where: { isolated: true },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  return rows.map((r) => ({ downstream: r.id, taskQueue: downstreamTaskQueue(taskQueue, r.id) }));
}
