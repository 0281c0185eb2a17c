/**
 * The public job API: what a team writes to bring its own partner. A job says how to fetch one
 * page from its partner, how to store a page in its own tables, and optionally one non-idempotent
 * downstream action; the engine supplies everything else (claims and fencing, staging,
 * idempotency records, outbox rows, the compensation ledger, dead letters, replay, pause, metrics).
 * Guide: docs/jobs.md.
 */
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Prisma } from '../../prisma/generated/client.ts';
import type { HttpClient } from '../http.ts';
import type { RunWindow, WatermarkSpec } from './watermark.ts';

/** What a job sees of its source: the row's settings and its validated job config. */
export interface JobSource<Config> {
  id: string;
  name: string;
  /** The partner's base URL (`sources add --base-url`). */
  baseUrl: string;
  /** IANA timezone the business date is read in. */
  timezone: string;
  /** Records per stored page (the unit of idempotency). */
  pageSize: number;
  config: Config;
}

/** Where and as whom a job calls its partner; built by the engine for every call. */
export interface PartnerAccess {
  /**
   * The project's HTTP client: connect and response timeouts, bounded bodies, failures classified
   * into the engine's error types (429 → RateLimited with Retry-After, 5xx → UpstreamUnavailable…).
   */
  http: HttpClient;
  /** Aborted when the activity is cancelled or times out: pass it to every call. */
  signal: AbortSignal;
  /**
   * The source's credential, resolved from its `DF_SECRET_*` reference at call time; undefined when
   * the source has none. Never store, log or return it.
   */
  token: string | undefined;
  /** Resolves another `DF_SECRET_*` reference named in the job's config, at call time. */
  secret: (ref: string) => string | undefined;
  /**
   * A valid access token of OAuth2 credential `id` (docs/credentials.md): shared by every worker,
   * refreshed once per expiry. Pass the token a partner just refused with 401 as `rejected` to get
   * a new one (one refresh however many callers ask). Never store, log or return it.
   */
  oauthToken: (id: string, request?: { rejected?: string }) => Promise<string>;
  log: Logger;
}

export interface FetchContext<Config> extends PartnerAccess {
  source: JobSource<Config>;
  /** `YYYY-MM-DD`, in the source's timezone. */
  businessDate: string;
  /** Where the partner left off (the `nextCursor` a previous call returned); null at the start. */
  cursor: string | null;
  /**
   * Records to ask the partner for: what is left of the stored page, at most the worker's partner
   * page limit. A partner that sends more (its own page size, or no limit at all) may be returned
   * as it came, up to {@link MAX_RECORDS_PER_RESPONSE} records (more are refused,
   * `TOO_MANY_RECORDS`): the engine stores the overflow as the pages after this one, without
   * calling the job again for it. Do not ask the partner for the same response again to take
   * the rest.
   */
  limit: number;
  /** The page's stable idempotency key: send it as `Idempotency-Key` where the partner takes one. */
  idempotencyKey: string;
  /**
   * Partner pages the run has staged before this call (over every stored page and this one), for a
   * job that bounds the pages of a run. The engine refuses, run-wide, a `nextCursor` the run
   * reached before (`CURSOR_LOOP`), so a job need not track its cursors itself.
   */
  pagesFetched: number;
  /**
   * The window of an incremental source's run (the job's `watermark` hook names one): what
   * changed since the source's watermark, fixed before the run's first partner call and the same
   * for every call of the run. Undefined for a source that reads by business date only.
   */
  window?: RunWindow;
}

/**
 * Most records one `fetchPage` may return (one partner response): the engine stages them, with
 * the pages they spill into, in one statement.
 */
export const MAX_RECORDS_PER_RESPONSE = 10_000;

/** One partner response: its records, and where to continue (null: the partner has no more). */
export interface FetchedPage<R> {
  records: readonly R[];
  nextCursor: string | null;
  /**
   * Why the job believes the partner has no more (with `nextCursor` null), in words: which of the
   * partner's end signals held (`meta.next_cursor was null`, `has_more was false`, `a short page`).
   * `sources try` shows it; a run ignores it.
   */
  end?: string;
  /** What looked wrong on this page without failing it, for `sources try` (never secrets or values). */
  warnings?: readonly string[];
}

/** A record with the id the job gave it; ids are unique within a stored page (last one wins). */
export interface StoredRecord<R> {
  id: string;
  record: R;
}

/** Raw statements on a store's transaction: `$queryRaw` and `$executeRaw` as Prisma has them. */
export type TransactionSql = Pick<Prisma.TransactionClient, '$queryRaw' | '$executeRaw'>;

export interface StoreContext<Config> {
  source: JobSource<Config>;
  /**
   * Raw statements on the page's transaction itself, sent on its own connection by the driver under
   * Prisma's adapter: the same transaction and effect as `tx.$executeRaw`, without the Prisma
   * client's cost per statement (which grows with kilobytes of JSON parameters). For the typed
   * model API, use `tx`.
   */
  sql: TransactionSql;
  businessDate: string;
  /** The run (`FetchRun` id): reference it from business rows to trace them back. */
  fetchRunId: string;
  /** Index of the page (0-based). */
  pageNo: number;
  /** The transaction's time: use it for row timestamps so a repeat writes the same values. */
  now: Date;
}

/** An outbox event of a page: delivered at least once; its id is derived by the engine. */
export interface JobEvent {
  topic: string;
  payload: Prisma.InputJsonObject;
}

/** What a stored page emits; `recordCount` defaults to the number of records given. */
export interface StoreResult {
  events: readonly JobEvent[];
  recordCount?: number;
}

/** An effect of the downstream action at the partner, in the partner's words. */
export interface DownstreamEffect {
  /** The partner's id of the effect. */
  id: string;
  /** What the partner says of it, e.g. `submitted`, `posted`, `confirmed`, `voided`. */
  status: string;
  /** True once the effect is undone at the partner. */
  voided: boolean;
}

/** What the run did, for the downstream request: counts only (never business snapshots). */
export interface RunSummary {
  fetchRunId: string;
  sourceId: string;
  businessDate: string;
  pages: number;
  records: number;
}

export interface DownstreamContext<Config> extends PartnerAccess {
  source: JobSource<Config>;
}

export interface SubmitContext<Config> extends DownstreamContext<Config> {
  /**
   * The reference the partner must keep with the effect (it is how `lookup` finds it again).
   * Stable per run: every call of the action carries the same one.
   */
  reference: string;
  run: RunSummary;
  /**
   * A `performance.now()` instant: pass it as `sendBy` to `http.postJson`, so that a request that
   * could not start in time is never sent. The engine's settle window relies on it.
   */
  sendBy: number;
}

/**
 * A non-idempotent downstream call and how to settle and undo it. The engine records intent before
 * `submit` and the outcome after; an unknown outcome is settled with `lookup`, never by calling
 * again blindly; a run that fails for good or is cancelled has its effect undone with `void`.
 */
export interface DownstreamAction<Config> {
  /** Name in the compensation ledger, e.g. `submit-summary`: lower case, digits, `-` and `_`. */
  name: string;
  /** Makes the effect. Called at most once per intent; must pass `ctx.sendBy` on. */
  submit(ctx: SubmitContext<Config>): Promise<DownstreamEffect>;
  /** Every effect the partner holds under `reference`, oldest first (a read). */
  lookup(ctx: DownstreamContext<Config>, reference: string): Promise<readonly DownstreamEffect[]>;
  /** Makes a submitted effect final, repeat-safe by id; absent when submitting is final already. */
  confirm?(ctx: DownstreamContext<Config>, effectId: string): Promise<DownstreamEffect>;
  /** Undoes an effect, repeat-safe by id. */
  void(ctx: DownstreamContext<Config>, effectId: string): Promise<DownstreamEffect>;
}

/** Read access for checks that compare a run's business rows with what it announced. */
export type JobReader = Omit<Prisma.TransactionClient, `$execute${string}`>;

/** The run `durable-fetch reconcile` compares. */
export interface ReconciledRun {
  sourceId: string;
  fetchRunId: string;
  /** `YYYY-MM-DD`. */
  businessDate: string;
}

/**
 * What `durable-fetch reconcile` needs to compare a run's business rows with its page events and
 * with the partner (whose records it reads with `fetchPage`).
 */
export interface RecordsReconcile {
  /** The record ids a page event lists; undefined for an event that is not a page's. */
  listedIds(event: { topic: string; payload: unknown }): readonly string[] | undefined;
  /** Of `ids`, those that have a business row for the run's source (and date, where rows have one). */
  existingIds(db: JobReader, run: ReconciledRun, ids: readonly string[]): Promise<string[]>;
  /** Ids of the business rows the run wrote last. */
  runIds(db: JobReader, run: ReconciledRun): Promise<string[]>;
}

export interface JobDefinition<Config = Record<string, never>, R = Record<string, unknown>> {
  /** The job type: in workflow ids, keys, metrics and `sources add --job`. Lower case, digits, `-`. */
  type: string;
  /** One line for `sources add --help` and listings. */
  description: string;
  /** The per-source config (`sources add --config`), validated when a source is added or updated. */
  config?: z.ZodType<Config>;
  /** The id of a record (unique per source at the partner, at most 200 characters). */
  recordId(record: R): string;
  /** Fetches one partner response. A read: repeat-safe. */
  fetchPage(ctx: FetchContext<Config>): Promise<FetchedPage<R>>;
  /**
   * Writes the page's business rows through `tx` or `ctx.sql` only (both are the page's
   * transaction), and returns its events. Deterministic: the same records must write the same rows
   * (a retry may run it again after a rollback).
   */
  storePage(
    tx: Prisma.TransactionClient,
    records: readonly StoredRecord<R>[],
    ctx: StoreContext<Config>,
  ): Promise<StoreResult>;
  /** How `durable-fetch reconcile` reads a run's records back; absent: only its ledger is checked. */
  reconcile?: RecordsReconcile;
  downstream?: DownstreamAction<Config>;
  /**
   * Makes a source's runs incremental (docs/http-sources.md, "Incremental windows"): how a
   * record's cursor value is read and where a first window starts. Undefined for a source that
   * reads by business date only. With it, every `fetchPage` gets `ctx.window`, and the engine
   * moves the source's watermark in the transaction of the page that carries it.
   */
  watermark?(config: Config): WatermarkSpec<R> | undefined;
}

/** A job of any config and record type, as the engine holds it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the registry holds jobs of any config.
export type AnyJob = JobDefinition<any, any>;

/**
 * Defines a job (see docs/jobs.md). Only checks the definition's shape; registration checks the
 * type is unique.
 */
export function defineJob<Config = Record<string, never>, R = Record<string, unknown>>(
  job: JobDefinition<Config, R>,
): JobDefinition<Config, R> {
  return job;
}
