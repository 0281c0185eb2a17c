/**
 * Reconciling side effects (R11): for each selected run, compares what the database holds — the
 * run row, its business rows, its outbox events, its compensation ledger — with itself and with
 * the partner (its records API and its submissions), and lists every mismatch.
 *
 * The database is read in one REPEATABLE READ snapshot per run (so a run being written meanwhile
 * cannot produce a false mismatch), the partner only with GETs. One write: a live submission the
 * ledger does not know is recorded as a stray, so that it is voided (never left alone). A partner
 * that cannot be read is reported on the run (`PARTNER_UNREACHABLE`), never thrown.
 */
import { ApplicationFailure } from '@temporalio/common';
import { classify } from '../activities/errors.ts';
import type { HttpClient } from '../activities/http.ts';
import type { AnyJob, DownstreamEffect, DownstreamContext } from '../activities/job-api/define.ts';
import type { JobRegistry } from '../activities/job-api/registry.ts';
import { checkedPage, idOf, jobOf } from '../activities/job-runtime.ts';
import { RUN_COMPLETED_TOPIC } from '../activities/outbox.ts';
import { AWAITING_SETTLEMENT_STATES as AWAITING_SETTLEMENT, recordStray } from '../db/ledger.ts';
import { bearerToken } from '../activities/sources.ts';
import { createLogger } from '../worker/logger.ts';
import { defaultJobs } from '../worker/jobs.ts';
import {
  type DownstreamAction,
  type FetchRun,
  Prisma,
  type PrismaClient,
  type RunStatus,
  type Source,
} from '../prisma/generated/client.ts';
import { errorMessage, UserFacingError } from '../worker/errors.ts';
import { dateColumn, isBusinessDate, isSourceId } from '../workflows/business-key.ts';
import { formatDate, getRun, OPEN_RUN_STATUSES } from './runs.ts';

/** What reconciling needs: the database, an HTTP client for the partner, and secrets by reference. */
export interface ReconcileContext {
  prisma: PrismaClient;
  http: HttpClient;
  /** Resolves a source's credentials reference (e.g. `DF_SECRET_ACME`) to its token, at call time. */
  secret: (ref: string) => string | undefined;
  /** Records asked per partner page (the partner may serve fewer). Default 50; 1..500. */
  pageLimit?: number;
  /** Deadline of one partner request, in ms. Default 30 s. */
  requestTimeoutMs?: number;
  /** The jobs whose partners are read; default those of jobs/index.ts. */
  jobs?: JobRegistry;
}

type Submission = DownstreamEffect;

/** Exactly one of `runId` or `date`; `sourceId` narrows a date to one source. */
export interface ReconcileSelector {
  /** FetchRun id, workflow id, or `<source>/<date>`. */
  runId?: string;
  /** `YYYY-MM-DD`: every run of that business date. */
  date?: string;
  sourceId?: string;
}

export interface ReconcileOptions {
  /** Called after each run is checked (for progress output). */
  onProgress?: (done: number, total: number) => void;
}

/** A mismatch: something the database and the partner (or the database and itself) disagree on. */
export const MISMATCH_CODES = [
  // The database against itself.
  'RECORDS_COUNT',
  'PAGES_COUNT',
  'RECORD_MISSING',
  'RECORD_WITHOUT_EVENT',
  'DUPLICATE_IN_EVENTS',
  'COMPLETION_EVENT_MISSING',
  'COMPLETION_EVENT_UNEXPECTED',
  'COMPLETION_EVENT_COUNTS',
  'OUTBOX_DEAD',
  // The run's records against the partner's.
  'PARTNER_UNREACHABLE',
  'MISSING_AT_OURS',
  'EXTRA_AT_OURS',
  // The compensation ledger against the partner's submissions.
  'SUBMISSION_MISSING',
  'SUBMISSION_NOT_CONFIRMED',
  'DUPLICATE_SUBMISSION',
  'ACTION_NOT_AT_PARTNER',
  'ACTION_VOIDED_AT_PARTNER',
  'EXTRA_LIVE_SUBMISSION',
  'COMPENSATED_BUT_LIVE',
  'NOT_APPLIED_BUT_LIVE',
  'UNCOMPENSATED_ACTION',
  'UNSETTLED_ACTION',
  'STRAY_NOT_VOIDED',
] as const;
export type MismatchCode = (typeof MISMATCH_CODES)[number];

/** Information only, never a mismatch. */
export const NOTE_CODES = ['IN_PROGRESS', 'OUTBOX_PENDING', 'ACTION_RESOLVED'] as const;
export type NoteCode = (typeof NOTE_CODES)[number];

export interface Finding<C extends string = MismatchCode | NoteCode> {
  code: C;
  /** One line for a human. */
  message: string;
  /** What the check wanted, and what it found (JSON values). */
  expected?: unknown;
  actual?: unknown;
  /** The compensation ledger row concerned, if any. */
  actionId?: string;
  /** The record or event ids concerned (at most 1000; the message quotes the first few). */
  ids?: string[];
}

export interface RunReport {
  runId: string;
  workflowId: string;
  sourceId: string;
  /** `YYYY-MM-DD`. */
  businessDate: string;
  status: RunStatus;
  /** The run row's counters, and what the database holds for it. */
  records: number;
  pages: number;
  /** Outbox events of the run (any topic, any status). */
  events: number;
  /** Rows of the compensation ledger of the run. */
  compensations: number;
  /** Records the partner holds for (source, date); null when not compared (or unreadable). */
  partnerRecords: number | null;
  mismatches: Finding<MismatchCode>[];
  notes: Finding<NoteCode>[];
}

export interface ReconcileReport {
  runs: RunReport[];
  /** Mismatches over all runs. */
  mismatches: number;
}

/** Statuses of a run whose workflow may still write: compared with nothing outside the database. */
/** Ids quoted in one message, at most. */
const QUOTE = 5;
/** Partner pages read for one (source, date), at most: a partner that never ends is a fault. */
const MAX_PARTNER_PAGES = 10_000;

/**
 * Reconciles the selected runs, in source order for a date. Read-only.
 * @throws UserFacingError (INVALID_INPUT) for a selector that is not exactly one of runId/date, a
 *   malformed date or source id; (NOT_FOUND) for an unknown run or source. Database errors pass
 *   through. Partner failures never throw: they are `PARTNER_UNREACHABLE` mismatches.
 */
export async function reconcileRuns(
  ctx: ReconcileContext,
  selector: ReconcileSelector,
  options: ReconcileOptions = {},
): Promise<ReconcileReport> {
  const runs = await selectRuns(ctx, selector);
  const reports: RunReport[] = [];
  for (const run of runs) {
    reports.push(await reconcileRun(ctx, run));
    options.onProgress?.(reports.length, runs.length);
  }
  return { runs: reports, mismatches: reports.reduce((n, r) => n + r.mismatches.length, 0) };
}

async function selectRuns(ctx: ReconcileContext, selector: ReconcileSelector): Promise<FetchRun[]> {
  const { runId, date, sourceId } = selector;
  if ((runId === undefined) === (date === undefined)) {
    throw new UserFacingError('give exactly one of a run id or --date', 'INVALID_INPUT');
  }
  if (runId !== undefined) {
    if (sourceId !== undefined) {
      throw new UserFacingError('--source goes with --date, not with a run id', 'INVALID_INPUT');
    }
    const run = await getRun(ctx, runId);
    if (!run) throw new UserFacingError(`no run '${runId}'`, 'NOT_FOUND');
    return [run];
  }
  if (date === undefined || !isBusinessDate(date)) {
    throw new UserFacingError(`--date must be a calendar date YYYY-MM-DD, got '${date}'`, 'INVALID_INPUT');
  }
  if (sourceId !== undefined) {
    if (!isSourceId(sourceId)) throw new UserFacingError(`'${sourceId}' is not a source id`, 'INVALID_INPUT');
    const source = await ctx.prisma.source.findUnique({ where: { id: sourceId }, select: { id: true } });
    if (!source) throw new UserFacingError(`no source '${sourceId}'`, 'NOT_FOUND');
  }
  return ctx.prisma.fetchRun.findMany({
    where: { businessDate: dateColumn(date), ...(sourceId === undefined ? {} : { sourceId }) },
    orderBy: [{ sourceId: 'asc' }, { jobType: 'asc' }],
  });
}

/** What the database holds for one run, read in one snapshot. */
interface Snapshot {
  run: FetchRun;
  source: Source;
  events: { id: string; topic: string; status: string; payload: Prisma.JsonValue }[];
  /** The run's job, when this process knows its type. */
  job: AnyJob | undefined;
  /** Ids listed by the run's page events that have a business row of the source. */
  existing: Set<string>;
  /** Ids of the business rows pointing at the run. */
  ownRows: string[];
  actions: DownstreamAction[];
}

async function readSnapshot(
  prisma: PrismaClient,
  jobs: JobRegistry,
  runId: string,
): Promise<Snapshot | undefined> {
  return prisma.$transaction(
    async (tx) => {
      const run = await tx.fetchRun.findUnique({ where: { id: runId } });
      if (!run) return undefined;
      const source = await tx.source.findUniqueOrThrow({ where: { id: run.sourceId } });
      const events = await tx.outboxEvent.findMany({
        where: { aggregateType: 'fetch_run', aggregateId: run.id },
        select: { id: true, topic: true, status: true, payload: true },
        orderBy: { seq: 'asc' },
      });
      const job = jobs.find(run.jobType);
      const records = job?.reconcile;
      const listed = [...new Set(events.flatMap((e) => idsOf(job, e) ?? []))];
      const key = { sourceId: run.sourceId, fetchRunId: run.id, businessDate: formatDate(run.businessDate) };
      const found = records && listed.length > 0 ? await records.existingIds(tx, key, listed) : [];
      const own = records ? await records.runIds(tx, key) : [];
      const actions = await tx.downstreamAction.findMany({
        where: { fetchRunId: run.id },
        orderBy: [{ round: 'asc' }, { step: 'asc' }],
      });
      return { run, source, job, events, existing: new Set(found), ownRows: own, actions };
    },
    { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead, maxWait: 5_000, timeout: 60_000 },
  );
}

/** The record ids a page event lists (per its job); undefined for any other event. */
function idsOf(
  job: AnyJob | undefined,
  event: { topic: string; payload: Prisma.JsonValue },
): string[] | undefined {
  const ids = job?.reconcile?.listedIds(event);
  return ids === undefined ? undefined : [...ids];
}

function numberIn(payload: Prisma.JsonValue, key: string): number | undefined {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  const v = payload[key];
  return typeof v === 'number' ? v : undefined;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** `a, b, c and 4 more`. */
function quote(ids: readonly string[]): string {
  const shown = ids.slice(0, QUOTE).join(', ');
  return ids.length > QUOTE ? `${shown} and ${ids.length - QUOTE} more` : shown;
}

/** The ids a finding carries: a whole date could be many thousands. */
function sample(ids: readonly string[]): string[] {
  return ids.slice(0, 1000);
}

/** A partner read failed: type and safe message (never a body, never a secret). */
class PartnerUnreachable extends Error {
  constructor(
    readonly errorType: string,
    message: string,
  ) {
    super(message);
  }
}

function unreachable(err: unknown, what: string): PartnerUnreachable {
  if (err instanceof PartnerUnreachable) return err;
  const f = classify(err, what);
  if (f instanceof ApplicationFailure) return new PartnerUnreachable(f.type ?? 'Internal', f.message);
  return new PartnerUnreachable('Internal', `${what}: ${errorMessage(err)}`);
}

async function reconcileRun(ctx: ReconcileContext, selected: FetchRun): Promise<RunReport> {
  const snap = await readSnapshot(ctx.prisma, ctx.jobs ?? defaultJobs(), selected.id);
  const run = snap?.run ?? selected;
  const report: RunReport = {
    runId: run.id,
    workflowId: run.workflowId,
    sourceId: run.sourceId,
    businessDate: formatDate(run.businessDate),
    status: run.status,
    records: run.recordsStored,
    pages: run.pagesStored,
    events: snap?.events.length ?? 0,
    compensations: snap?.actions.length ?? 0,
    partnerRecords: null,
    mismatches: [],
    notes: [],
  };
  if (!snap) return report; // deleted meanwhile: nothing left to compare
  const stored = checkDatabase(snap, report);
  if (OPEN_RUN_STATUSES.includes(run.status)) {
    report.notes.push({
      code: 'IN_PROGRESS',
      message: `run is ${run.status}: not compared with the partner until it ends`,
    });
    return report;
  }
  const partner = new PartnerReader(ctx, snap.source, snap.job);
  if (run.status === 'succeeded' && snap.job?.reconcile) await checkRecords(partner, snap, stored, report);
  await checkActions(ctx, partner, snap, report);
  return report;
}

/** The database against itself. Returns the distinct externalIds the run's page events list. */
function checkDatabase(snap: Snapshot, report: RunReport): Set<string> {
  const mismatch = (f: Finding<MismatchCode>) => report.mismatches.push(f);
  const pages = snap.events.flatMap((e) => {
    const ids = idsOf(snap.job, e);
    return ids === undefined ? [] : [ids];
  });

  const seen = new Map<string, number>();
  for (const page of pages) {
    for (const id of new Set(page)) seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  const listed = new Set(seen.keys());
  const repeated = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  if (repeated.length > 0) {
    mismatch({
      code: 'DUPLICATE_IN_EVENTS',
      message: `${plural(repeated.length, 'externalId')} in more than one page event: ${quote(repeated)}`,
      expected: 0,
      actual: repeated.length,
      ids: sample(repeated),
    });
  }
  // Without the job's reconcile hooks (or the job itself) the records cannot be read back.
  if (snap.job?.reconcile) checkRecordRows(snap, report, pages.length, listed);
  checkCompletion(snap, report);
  return listed;
}

/** The run's counters and business rows against its page events. */
function checkRecordRows(snap: Snapshot, report: RunReport, pages: number, listed: Set<string>): void {
  const { run } = snap;
  const mismatch = (f: Finding<MismatchCode>) => report.mismatches.push(f);
  if (run.pagesStored !== pages) {
    mismatch({
      code: 'PAGES_COUNT',
      message: `pages_stored is ${run.pagesStored} but the run has ${pages} page events`,
      expected: run.pagesStored,
      actual: pages,
    });
  }
  if (run.recordsStored !== listed.size) {
    mismatch({
      code: 'RECORDS_COUNT',
      message: `records_stored is ${run.recordsStored} but the run's page events list ${listed.size} distinct records`,
      expected: run.recordsStored,
      actual: listed.size,
    });
  }
  const missing = [...listed].filter((id) => !snap.existing.has(id));
  if (missing.length > 0) {
    mismatch({
      code: 'RECORD_MISSING',
      message: `page events list ${plural(missing.length, 'record')} with no business row: ${quote(missing)}`,
      expected: listed.size,
      actual: listed.size - missing.length,
      ids: sample(missing),
    });
  }
  const unlisted = snap.ownRows.filter((id) => !listed.has(id));
  if (unlisted.length > 0) {
    mismatch({
      code: 'RECORD_WITHOUT_EVENT',
      message: `${plural(unlisted.length, 'business row')} of the run in none of its page events: ${quote(unlisted)}`,
      expected: 0,
      actual: unlisted.length,
      ids: sample(unlisted),
    });
  }
}

/** The completion event and the outbox's delivery state of the run. */
function checkCompletion(snap: Snapshot, report: RunReport): void {
  const { run, events } = snap;
  const mismatch = (f: Finding<MismatchCode>) => report.mismatches.push(f);
  const completions = events.filter((e) => e.topic === RUN_COMPLETED_TOPIC);
  const completion = completions[0];
  if (run.status === 'succeeded' && !completion) {
    mismatch({
      code: 'COMPLETION_EVENT_MISSING',
      message: `run succeeded but has no ${RUN_COMPLETED_TOPIC} event`,
      expected: 1,
      actual: 0,
    });
  } else if (run.status !== 'succeeded' && completion) {
    mismatch({
      code: 'COMPLETION_EVENT_UNEXPECTED',
      message: `run is ${run.status} but has a ${RUN_COMPLETED_TOPIC} event (${completion.id})`,
      expected: 0,
      actual: completions.length,
    });
  }
  if (completion) {
    const said = {
      pages: numberIn(completion.payload, 'pages'),
      records: numberIn(completion.payload, 'records'),
    };
    if (said.pages !== run.pagesStored || said.records !== run.recordsStored) {
      mismatch({
        code: 'COMPLETION_EVENT_COUNTS',
        message: `${RUN_COMPLETED_TOPIC} event says ${said.pages} pages, ${said.records} records; the run ${run.pagesStored}, ${run.recordsStored}`,
        expected: { pages: run.pagesStored, records: run.recordsStored },
        actual: said,
      });
    }
  }
  const dead = events.filter((e) => e.status === 'dead');
  if (dead.length > 0) {
    mismatch({
      code: 'OUTBOX_DEAD',
      message: `${plural(dead.length, 'outbox event')} of the run dead (never delivered): ${quote(dead.map((e) => `${e.topic} ${e.id}`))}`,
      expected: 0,
      actual: dead.length,
      ids: dead.map((e) => e.id),
    });
  }
  const pending = events.filter((e) => e.status === 'pending').length;
  if (pending > 0) {
    report.notes.push({
      code: 'OUTBOX_PENDING',
      message: `${plural(pending, 'outbox event')} not delivered yet (the publisher sends them)`,
      actual: pending,
    });
  }
}

/** Partner reads of one run; after the first failure it stops asking (reported once). */
class PartnerReader {
  failed: PartnerUnreachable | undefined;

  constructor(
    private readonly ctx: ReconcileContext,
    private readonly source: Source,
    private readonly job: AnyJob | undefined,
  ) {}

  /** The job's view of the source and partner access for one call (token resolved now, R2). */
  private access(): DownstreamContext<unknown> & { job: AnyJob } {
    const { job, view } = jobOf({ jobs: this.ctx.jobs ?? defaultJobs() }, this.source);
    return {
      job,
      source: view,
      http: this.ctx.http,
      signal: this.signal(),
      token: bearerToken(this.source, this.ctx.secret),
      secret: this.ctx.secret,
      log: QUIET,
    };
  }

  private signal(): AbortSignal {
    return AbortSignal.timeout(this.ctx.requestTimeoutMs ?? 30_000);
  }

  /** Runs `read`; on failure records it and returns undefined (also for every later call). */
  async read<T>(what: string, read: () => Promise<T>, report: RunReport): Promise<T | undefined> {
    if (this.failed) return undefined;
    try {
      return await read();
    } catch (err) {
      this.failed = unreachable(err, what);
      report.mismatches.push({
        code: 'PARTNER_UNREACHABLE',
        message: `cannot read ${what} at ${this.source.baseUrl}: ${this.failed.message}`,
        actual: { errorType: this.failed.errorType },
      });
      return undefined;
    }
  }

  /** Every record id the partner has for the date, following nextCursor. */
  async recordIds(businessDate: string): Promise<string[]> {
    const ids: string[] = [];
    const seenCursors = new Set<string>();
    let cursor: string | null = null;
    for (let page = 0; ; page++) {
      if (page >= MAX_PARTNER_PAGES) {
        throw new PartnerUnreachable('InvalidResponse', `more than ${MAX_PARTNER_PAGES} pages`);
      }
      const { job, ...access } = this.access();
      const limit = Math.min(Math.max(this.ctx.pageLimit ?? 50, 1), 500);
      const fetched = await job.fetchPage({
        ...access,
        businessDate,
        cursor,
        limit,
        idempotencyKey: `reconcile:${this.source.id}:${businessDate}:page:${page}`,
      });
      const what = `partner ${this.source.id} records`;
      const body = checkedPage(job, fetched, limit, what);
      for (const r of body.records) ids.push(idOf(job, r, what));
      if (body.nextCursor === null) return ids;
      if (seenCursors.has(body.nextCursor)) {
        throw new PartnerUnreachable('InvalidResponse', `the partner repeats cursor ${body.nextCursor}`);
      }
      seenCursors.add(body.nextCursor);
      cursor = body.nextCursor;
    }
  }

  /** Every effect of the job's downstream action under `reference` (none without an action). */
  async submissions(reference: string): Promise<readonly Submission[]> {
    const { job, ...access } = this.access();
    return job.downstream ? job.downstream.lookup(access, reference) : [];
  }
}

/** A succeeded run's records against every record the partner has for (source, date). */
async function checkRecords(
  partner: PartnerReader,
  snap: Snapshot,
  stored: Set<string>,
  report: RunReport,
): Promise<void> {
  const ids = await partner.read(
    `partner ${snap.source.id} records of ${report.businessDate}`,
    () => partner.recordIds(report.businessDate),
    report,
  );
  if (!ids) return;
  const theirs = new Set(ids);
  report.partnerRecords = theirs.size;
  const missing = [...theirs].filter((id) => !stored.has(id));
  const extra = [...stored].filter((id) => !theirs.has(id));
  if (missing.length > 0) {
    report.mismatches.push({
      code: 'MISSING_AT_OURS',
      message: `the partner has ${plural(missing.length, 'record')} the run did not store: ${quote(missing)}`,
      expected: theirs.size,
      actual: stored.size,
      ids: sample(missing),
    });
  }
  if (extra.length > 0) {
    report.mismatches.push({
      code: 'EXTRA_AT_OURS',
      message: `the run stored ${plural(extra.length, 'record')} the partner does not have: ${quote(extra)}`,
      expected: theirs.size,
      actual: stored.size,
      ids: sample(extra),
    });
  }
}

const live = (s: Submission) => !s.voided;
/** Job code reading for reconcile logs nothing of its own. */
const QUIET = createLogger('silent');
const brief = (list: readonly Submission[]) => list.map((s) => ({ id: s.id, status: s.status }));
const describeHeld = (list: readonly Submission[]) =>
  list.length === 0 ? 'nothing' : list.map((s) => `${s.id} ${s.status}`).join(', ');

/**
 * A stray row (an effect the ledger did not expect, to be voided whatever the run's outcome)
 * against the partner: live means its void is still to come.
 */
function checkStray(
  action: DownstreamAction,
  held: readonly Submission[] | undefined,
  report: RunReport,
): void {
  const what = `stray ${action.id} (submission ${action.partnerId ?? '?'} under ${action.reference})`;
  if (action.state === 'compensated' || action.state === 'resolved' || action.state === 'not_applied') {
    const recorded = held?.find((s) => s.id === action.partnerId);
    if (action.state === 'compensated' && recorded && live(recorded)) {
      report.mismatches.push({
        code: 'COMPENSATED_BUT_LIVE',
        message: `${what} is compensated but ${recorded.id} is ${recorded.status} at the partner`,
        expected: 'voided',
        actual: recorded.status,
        actionId: action.id,
      });
    }
    return;
  }
  report.mismatches.push({
    code: 'STRAY_NOT_VOIDED',
    message: `${what} is ${action.state}: not voided yet (the workers' sweep starts its compensation)`,
    expected: 'compensated (voided)',
    actual: action.state,
    actionId: action.id,
  });
}

/**
 * The compensation ledger of the run against the partner's submissions. A live submission under
 * an action's reference that the ledger does not know is recorded as a stray of that action (the
 * one write reconcile makes: the workers' sweep then voids it).
 */
async function checkActions(
  ctx: ReconcileContext,
  partner: PartnerReader,
  snap: Snapshot,
  report: RunReport,
): Promise<void> {
  const succeeded = snap.run.status === 'succeeded';
  const mismatch = (f: Finding<MismatchCode>) => report.mismatches.push(f);
  /** Confirmed rows of a succeeded run whose submission is live at the partner. */
  const liveConfirmed: string[] = [];

  for (const action of snap.actions) {
    const what = `action ${action.id} (${action.action}, round ${action.round})`;
    const held = await partner.read(
      `partner ${snap.source.id} submissions of ${action.reference}`,
      () => partner.submissions(action.reference),
      report,
    );
    const heldView = held ? brief(held) : 'unknown (partner unreachable)';
    const state = action.state;
    if (action.strayOf !== null) {
      checkStray(action, held, report);
      continue;
    }

    if (AWAITING_SETTLEMENT.includes(state)) {
      mismatch({
        code: 'UNSETTLED_ACTION',
        message: `${what} is ${state}: needs attention; the partner holds ${held ? describeHeld(held) : 'unknown (unreachable)'}`,
        expected: 'a settled state',
        actual: { state, partner: heldView },
        actionId: action.id,
      });
      continue;
    }
    if (state === 'resolved') {
      report.notes.push({
        code: 'ACTION_RESOLVED',
        message: `${what} was resolved by ${action.resolvedBy ?? 'an operator'}; the partner holds ${held ? describeHeld(held) : 'unknown (unreachable)'}`,
        actual: { partner: heldView },
        actionId: action.id,
      });
      continue;
    }
    if (!held) continue; // the partner could not be read: already reported
    const recorded = action.partnerId === null ? undefined : held.find((s) => s.id === action.partnerId);
    const strays = new Set(snap.actions.filter((a) => a.strayOf === action.id).map((a) => a.partnerId));
    const others = held.filter((s) => s.id !== action.partnerId && !strays.has(s.id) && live(s));

    if (state === 'not_applied') {
      const alive = held.filter(live);
      if (alive.length > 0) {
        mismatch({
          code: 'NOT_APPLIED_BUT_LIVE',
          message: `${what} is not_applied but the partner holds ${describeHeld(alive)} under ${action.reference}`,
          expected: [],
          actual: brief(alive),
          actionId: action.id,
        });
      }
      continue;
    }

    if (state === 'confirmed' || state === 'compensated') {
      if (action.partnerId !== null && !recorded) {
        mismatch({
          code: 'ACTION_NOT_AT_PARTNER',
          message: `${what} is ${state} with partner id ${action.partnerId}, which the partner does not list under ${action.reference}`,
          expected: action.partnerId,
          actual: brief(held),
          actionId: action.id,
        });
      } else if (action.partnerId === null && state === 'confirmed') {
        mismatch({
          code: 'ACTION_NOT_AT_PARTNER',
          message: `${what} is confirmed without a partner id; the partner holds ${describeHeld(held)}`,
          expected: 'a partner id',
          actual: brief(held),
          actionId: action.id,
        });
      }
    }

    if (state === 'confirmed' && recorded) {
      if (recorded.status === 'voided') {
        mismatch({
          code: 'ACTION_VOIDED_AT_PARTNER',
          message: `${what} is confirmed but submission ${recorded.id} is voided at the partner`,
          expected: succeeded ? 'confirmed' : 'submitted or confirmed',
          actual: recorded.status,
          actionId: action.id,
        });
      } else if (!succeeded) {
        mismatch({
          code: 'UNCOMPENSATED_ACTION',
          message: `run is ${snap.run.status} but ${what} is still confirmed and submission ${recorded.id} is ${recorded.status} at the partner: it was not compensated`,
          expected: 'compensated (voided)',
          actual: recorded.status,
          actionId: action.id,
        });
      } else {
        liveConfirmed.push(recorded.id);
        if (recorded.status !== 'confirmed') {
          mismatch({
            code: 'SUBMISSION_NOT_CONFIRMED',
            message: `run succeeded but submission ${recorded.id} is ${recorded.status} at the partner, not confirmed`,
            expected: 'confirmed',
            actual: recorded.status,
            actionId: action.id,
          });
        }
      }
    }

    if (state === 'compensated' && recorded && live(recorded)) {
      mismatch({
        code: 'COMPENSATED_BUT_LIVE',
        message: `${what} is compensated but submission ${recorded.id} is ${recorded.status} at the partner`,
        expected: 'voided',
        actual: recorded.status,
        actionId: action.id,
      });
    }

    if (others.length > 0) {
      const why = 'reconcile found it live beside the recorded submission';
      for (const s of others) {
        await recordStray(ctx.prisma, action, { partnerId: s.id, partnerState: s.status }, why);
      }
      mismatch({
        code: 'EXTRA_LIVE_SUBMISSION',
        message: `the partner holds ${plural(others.length, 'more live submission')} under ${action.reference} than ${what} records: ${describeHeld(others)}; recorded as strays, to be voided by the workers' sweep`,
        expected: action.partnerId === null ? [] : [action.partnerId],
        actual: brief(held.filter(live)),
        actionId: action.id,
      });
    }
  }

  if (
    succeeded &&
    snap.source.submitSummary &&
    !snap.actions.some((a) => a.state === 'confirmed' && a.strayOf === null)
  ) {
    mismatch({
      code: 'SUBMISSION_MISSING',
      message: `run succeeded and source ${snap.source.id} submits its summary, but no ledger row is confirmed`,
      expected: 'one confirmed submission',
      actual: snap.actions.map((a) => ({ id: a.id, state: a.state })),
    });
  }
  if (liveConfirmed.length > 1) {
    mismatch({
      code: 'DUPLICATE_SUBMISSION',
      message: `run succeeded with ${liveConfirmed.length} live submissions at the partner: ${liveConfirmed.join(', ')}`,
      expected: 1,
      actual: liveConfirmed,
    });
  }
}
