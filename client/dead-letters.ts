/**
 * Dead letters for operators (issue #7, R11): reading `dead_letter` rows — one per run that failed
 * for good, written by activities/finish-run.ts — with their audit trail and the attempts of the
 * failed workflow run as Temporal's history tells them, and the two things a human may do with an
 * open one: retry it (fix the input, start the business key's run again: pages already stored are
 * neither fetched nor written again) or discard it (with a reason). Every such act is recorded in
 * `audit_entry` in the same transaction as the change it made.
 *
 * Be very careful: state changes are conditional UPDATEs on `status = 'open'` and on no replay
 * holding the letter, so an operator racing another operator (or a `dlq replay`) can never move a
 * letter twice. Nothing here prints a payload: no activity input or result is ever decoded.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { ProtoFailure } from '@temporalio/common';
import type {
  AuditEntry,
  DeadLetter,
  DeadLetterStatus,
  Prisma,
  RunStatus,
} from '../prisma/generated/client.ts';
import { errorMessage, UserFacingError } from '../worker/errors.ts';
import { redactUrlsIn } from '../worker/redact.ts';
import { isBusinessDate } from '../workflows/business-key.ts';
import { replayWorkflowId } from '../workflows/replay-api.ts';
import { checkActor, checkText } from './audit.ts';
import { OPEN_RUN_STATUSES } from './runs.ts';
import { launchFetch, MAX_PAGE_SIZE, prepareFetch, type DurableFetchContext } from './start-fetch.ts';
import { recordAudit } from '../db/audit.ts';

export type { AuditEntry, DeadLetterStatus };

/** `target_type` of the audit entries about a dead letter. */
export const DEAD_LETTER_TARGET = 'dead_letter';

/** Longest `--reason` kept. */
export const MAX_REASON_LENGTH = 1000;
/** Longest failure message shown in a timeline entry. */
const MAX_FAILURE_MESSAGE = 500;
/** Continue-as-new hops followed from the claiming execution to the one that failed. */
const MAX_EXECUTIONS_FOLLOWED = 100;
/** How long reading one execution's history from Temporal may take. */
const HISTORY_DEADLINE_MS = 10_000;

/** Run statuses during which the key is being fetched already: a retry would only join it. */

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `id` has the shape of a dead letter id (a UUID). */
export function isDeadLetterId(id: string): boolean {
  return UUID_RE.test(id);
}

/** A dead letter with its business date written `YYYY-MM-DD` and its business key. */
export type DeadLetterView = Omit<DeadLetter, 'businessDate'> & {
  businessDate: string;
  /** `<jobType>:<sourceId>:<date>`: the key every page's idempotency key derives from. */
  businessKey: string;
};

/** Failure type and (redacted) message of an activity attempt. Never its details payloads. */
export interface AttemptFailure {
  type: string;
  message: string;
}

/**
 * One activity of the failed execution, as its history records it: Temporal writes only the
 * activity's last attempt (its number, start and end), and the failure of the attempt before it.
 */
export interface TimelineEntry {
  /** Activity type, e.g. `fetchPage`. */
  activity: string;
  activityId: string;
  /** Number of the last attempt (1 = it was not retried). */
  attempt: number;
  scheduledAt: Date;
  startedAt: Date | null;
  endedAt: Date | null;
  outcome: 'completed' | 'failed' | 'timed_out' | 'cancelled' | 'running' | 'scheduled';
  /** Why the last attempt failed or timed out. */
  failure?: AttemptFailure;
  /** Why the attempt before the last one failed (when there was one). */
  previousFailure?: AttemptFailure;
}

/** One dead letter with its run, its audit trail (oldest first) and the failed run's attempts. */
export type DeadLetterDetail = DeadLetterView & {
  run: {
    id: string;
    status: RunStatus;
    attempt: number;
    pagesStored: number;
    recordsStored: number;
    workflowId: string;
    workflowRunId: string | null;
  };
  audit: AuditEntry[];
  /** Activities of the execution that failed, in the order they were scheduled; undefined when unknown. */
  timeline?: TimelineEntry[];
  /** Temporal run id of that execution (a later one than `workflowRunId` after continue-as-new). */
  timelineRunId?: string;
  /** Why there is no timeline (Temporal unreachable, history gone…). */
  timelineNote?: string;
};

export interface ListDeadLettersFilter {
  sourceId?: string;
  /** DESIGN error type, e.g. `InvalidInput`. */
  errorType?: string;
  /** Only letters written at or after this time. */
  since?: Date;
  /** Default `open`; `all` for every status. */
  status?: DeadLetterStatus | 'all';
  /** Newest first; default 50, at most 1000. */
  limit?: number;
}

type PrismaCtx = Pick<DurableFetchContext, 'prisma'>;

function dateText(date: Date): string {
  return date.toISOString().slice(0, 10);
}

function view(row: DeadLetter): DeadLetterView {
  const businessDate = dateText(row.businessDate);
  return { ...row, businessDate, businessKey: `${row.jobType}:${row.sourceId}:${businessDate}` };
}

/** Dead letters, newest first. Read-only. */
export async function listDeadLetters(
  ctx: PrismaCtx,
  filter: ListDeadLettersFilter = {},
): Promise<DeadLetterView[]> {
  const status = filter.status ?? 'open';
  const rows = await ctx.prisma.deadLetter.findMany({
    where: {
      ...(status === 'all' ? {} : { status }),
      ...(filter.sourceId === undefined ? {} : { sourceId: filter.sourceId }),
      ...(filter.errorType === undefined ? {} : { errorType: filter.errorType }),
      ...(filter.since === undefined ? {} : { createdAt: { gte: filter.since } }),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    take: Math.min(Math.max(filter.limit ?? 50, 1), 1000),
  });
  return rows.map(view);
}

const RUN_SELECT = {
  id: true,
  status: true,
  attempt: true,
  pagesStored: true,
  recordsStored: true,
  workflowId: true,
  workflowRunId: true,
} as const;

/**
 * One dead letter by id with its run, audit trail and — when `temporal` is given and reachable —
 * the timeline of the failed execution read from its history (following continue-as-new from the
 * execution that claimed the run). Undefined when there is no such letter (or `id` is not a UUID).
 * Read-only. Temporal being unreachable is not an error: `timeline` is then undefined and
 * `timelineNote` says why.
 */
export async function getDeadLetter(
  ctx: PrismaCtx & { temporal?: Client | (() => Promise<Client>) },
  id: string,
): Promise<DeadLetterDetail | undefined> {
  if (!isDeadLetterId(id)) return undefined;
  const row = await ctx.prisma.deadLetter.findUnique({
    where: { id },
    include: { run: { select: RUN_SELECT } },
  });
  if (!row) return undefined;
  const { run, ...letter } = row;
  const audit = await ctx.prisma.auditEntry.findMany({
    where: { targetType: DEAD_LETTER_TARGET, targetId: row.id },
    orderBy: [{ at: 'asc' }, { id: 'asc' }],
  });
  const detail: DeadLetterDetail = { ...view(letter), run, audit };
  if (!letter.workflowRunId) {
    detail.timelineNote = 'the Temporal run id of the failed run is not known';
    return detail;
  }
  if (ctx.temporal === undefined) {
    detail.timelineNote = 'Temporal was not consulted';
    return detail;
  }
  let temporal: Client;
  try {
    temporal = typeof ctx.temporal === 'function' ? await ctx.temporal() : ctx.temporal;
  } catch (err) {
    detail.timelineNote = `Temporal is unreachable: ${redactUrlsIn(errorMessage(err))}`;
    return detail;
  }
  try {
    const found = await failedExecutionTimeline(temporal, letter.workflowId, letter.workflowRunId);
    detail.timeline = found.timeline;
    detail.timelineRunId = found.runId;
    if (found.note) detail.timelineNote = found.note;
  } catch (err) {
    detail.timelineNote =
      err instanceof WorkflowNotFoundError
        ? `the workflow run ${letter.workflowRunId} is no longer in Temporal (past its retention)`
        : `could not read the workflow history from Temporal: ${redactUrlsIn(errorMessage(err))}`;
  }
  return detail;
}

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;
type HistoryEvent = NonNullable<History['events']>[number];
type Timestamp = HistoryEvent['eventTime'];

/**
 * The activities of the execution that failed: reads the history of `runId` and follows
 * continue-as-new to the last execution of the chain (the run's page loop continues as new every
 * `pagesPerExecution` pages; only the claiming execution's run id is on the FetchRun).
 */
async function failedExecutionTimeline(
  temporal: Client,
  workflowId: string,
  runId: string,
): Promise<{ timeline: TimelineEntry[]; runId: string; note?: string }> {
  let current = runId;
  for (let hop = 0; ; hop++) {
    const history = await temporal.withDeadline(Date.now() + HISTORY_DEADLINE_MS, () =>
      temporal.workflow.getHandle(workflowId, current).fetchHistory(),
    );
    const events = history.events ?? [];
    const next = continuedAs(events);
    if (!next) return { timeline: timelineOf(events), runId: current };
    if (hop + 1 >= MAX_EXECUTIONS_FOLLOWED) {
      return {
        timeline: timelineOf(events),
        runId: current,
        note: `the run continued as new more than ${MAX_EXECUTIONS_FOLLOWED} times: this is execution ${current}, not the last one`,
      };
    }
    current = next;
  }
}

function continuedAs(events: HistoryEvent[]): string | undefined {
  const last = events[events.length - 1];
  return last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
}

/** Milliseconds of a protobuf timestamp (its seconds may be a Long). */
function dateOf(ts: Timestamp): Date | null {
  if (!ts) return null;
  const seconds = Number(String(ts.seconds ?? 0));
  return new Date(seconds * 1000 + Math.floor((ts.nanos ?? 0) / 1e6));
}

const TIMEOUT_TYPES: Record<number, string> = {
  1: 'StartToClose',
  2: 'ScheduleToStart',
  3: 'ScheduleToClose',
  4: 'Heartbeat',
};

/** Type and redacted message of a failure; never its details, stack or encoded attributes. */
function failureOf(f: ProtoFailure | null | undefined): AttemptFailure | undefined {
  if (!f) return undefined;
  const message = redactUrlsIn(f.message ?? '').slice(0, MAX_FAILURE_MESSAGE);
  if (f.applicationFailureInfo) return { type: f.applicationFailureInfo.type || 'Error', message };
  if (f.timeoutFailureInfo) {
    const kind = TIMEOUT_TYPES[Number(f.timeoutFailureInfo.timeoutType ?? 0)] ?? 'Unknown';
    return { type: `Timeout(${kind})`, message };
  }
  if (f.canceledFailureInfo) return { type: 'Cancelled', message };
  return { type: 'Failure', message };
}

/** The activity entries of one execution's history, in scheduling order. */
function timelineOf(events: HistoryEvent[]): TimelineEntry[] {
  const bySchedule = new Map<string, TimelineEntry>();
  const entryOf = (scheduledEventId: unknown) => bySchedule.get(String(scheduledEventId));
  for (const event of events) {
    const at = dateOf(event.eventTime);
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled && at) {
      bySchedule.set(String(event.eventId), {
        activity: scheduled.activityType?.name ?? 'unknown',
        activityId: scheduled.activityId ?? '',
        attempt: 1,
        scheduledAt: at,
        startedAt: null,
        endedAt: null,
        outcome: 'scheduled',
      });
      continue;
    }
    const started = event.activityTaskStartedEventAttributes;
    if (started) {
      const entry = entryOf(started.scheduledEventId);
      if (!entry) continue;
      entry.startedAt = at;
      entry.attempt = started.attempt ?? entry.attempt;
      entry.outcome = 'running';
      const previous = failureOf(started.lastFailure);
      if (previous) entry.previousFailure = previous;
      continue;
    }
    const completed = event.activityTaskCompletedEventAttributes;
    const failed = event.activityTaskFailedEventAttributes;
    const timedOut = event.activityTaskTimedOutEventAttributes;
    const cancelled = event.activityTaskCanceledEventAttributes;
    const end = completed ?? failed ?? timedOut ?? cancelled;
    if (!end) continue;
    const entry = entryOf(end.scheduledEventId);
    if (!entry) continue;
    entry.endedAt = at;
    if (completed) entry.outcome = 'completed';
    else if (failed) entry.outcome = 'failed';
    else if (timedOut) entry.outcome = 'timed_out';
    else entry.outcome = 'cancelled';
    const failure = failureOf(failed?.failure ?? timedOut?.failure);
    if (failure) entry.failure = failure;
  }
  return [...bySchedule.values()];
}

/** `--reason`, trimmed (the actor is checked by client/audit.ts `checkActor`). */
function checkReason(reason: string): string {
  return checkText(reason, 'the reason (--reason)', MAX_REASON_LENGTH);
}

/** What `dlq retry --override key=value` may change about the run started again. */
export interface RetryOverrides {
  /** Records per stored page, 1..1000. */
  pageSize?: number;
  /** Pages per workflow execution before it continues as new, 1..1000. */
  pagesPerExecution?: number;
}

/** The keys `--override` accepts. */
export const OVERRIDE_KEYS = ['pageSize', 'pagesPerExecution'] as const;
const MAX_OVERRIDE: Record<(typeof OVERRIDE_KEYS)[number], number> = {
  pageSize: MAX_PAGE_SIZE,
  pagesPerExecution: 1000,
};

function isOverrideKey(key: string): key is (typeof OVERRIDE_KEYS)[number] {
  return (OVERRIDE_KEYS as readonly string[]).includes(key);
}

function unknownOverride(key: string): UserFacingError {
  return new UserFacingError(
    `unknown override '${key}': allowed keys are ${OVERRIDE_KEYS.join(', ')}`,
    'INVALID_INPUT',
  );
}

function checkOverrideValue(key: (typeof OVERRIDE_KEYS)[number], value: unknown): number {
  const max = MAX_OVERRIDE[key];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new UserFacingError(
      `invalid override ${key}=${String(value)}: expected an integer 1..${max}`,
      'INVALID_INPUT',
    );
  }
  return value;
}

/**
 * Parses `key=value` pairs (`--override`, repeatable) into overrides.
 * @throws UserFacingError INVALID_INPUT naming the allowed keys (unknown key, malformed pair) or
 *   the allowed range (bad value, a key given twice).
 */
export function parseOverrides(pairs: readonly string[]): RetryOverrides {
  const overrides: RetryOverrides = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      throw new UserFacingError(
        `invalid override '${pair}': expected key=value with key one of ${OVERRIDE_KEYS.join(', ')}`,
        'INVALID_INPUT',
      );
    }
    const key = pair.slice(0, eq).trim();
    const text = pair.slice(eq + 1).trim();
    if (!isOverrideKey(key)) throw unknownOverride(key);
    if (overrides[key] !== undefined) {
      throw new UserFacingError(`override ${key} is given more than once`, 'INVALID_INPUT');
    }
    overrides[key] = checkOverrideValue(key, /^\d{1,7}$/.test(text) ? Number(text) : text);
  }
  return overrides;
}

/** Checks overrides given through the API (as {@link parseOverrides} does for text). */
function checkOverrides(overrides: RetryOverrides): RetryOverrides {
  const checked: RetryOverrides = {};
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    if (!isOverrideKey(key)) throw unknownOverride(key);
    checked[key] = checkOverrideValue(key, value);
  }
  return checked;
}

const DURATION_UNITS_MS: Record<string, number> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};
const ISO_TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Parses `--since`: a date `YYYY-MM-DD` (its UTC midnight), an ISO time with an offset
 * (`2026-11-29T12:00:00Z`), or a duration back from `now` (`90m`, `2h`, `3d`, `1w`).
 * @throws UserFacingError INVALID_INPUT.
 */
export function parseSince(text: string, now: Date = new Date()): Date {
  const value = text.trim();
  const duration = /^(\d{1,6})([smhdw])$/.exec(value);
  if (duration) {
    return new Date(now.getTime() - Number(duration[1]) * (DURATION_UNITS_MS[duration[2]!] ?? 0));
  }
  if (isBusinessDate(value)) return new Date(`${value}T00:00:00Z`);
  if (ISO_TIME_RE.test(value)) {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms)) return new Date(ms);
  }
  throw new UserFacingError(
    `invalid --since '${text}': expected YYYY-MM-DD, an ISO time like 2026-11-29T12:00:00Z, or a duration like 2h or 3d`,
    'INVALID_INPUT',
  );
}

async function loadLetter(
  ctx: PrismaCtx,
  id: string,
): Promise<DeadLetter & { run: { id: string; status: RunStatus } }> {
  const row = isDeadLetterId(id)
    ? await ctx.prisma.deadLetter.findUnique({
        where: { id },
        include: { run: { select: { id: true, status: true } } },
      })
    : null;
  if (!row) throw new UserFacingError(`no dead letter '${id}'`, 'NOT_FOUND');
  return row;
}

function notOpen(id: string, status: string, verb: 'retried' | 'discarded'): UserFacingError {
  return new UserFacingError(
    `dead letter ${id} is ${status}: only open letters can be ${verb}`,
    'INVALID_STATE',
  );
}

function reserved(id: string, replayId: string): UserFacingError {
  return new UserFacingError(
    `dead letter ${id} is reserved by replay ${replayId}: wait for it to end (or cancel it) first`,
    'RESERVED',
  );
}

/**
 * Whether a letter's replay reservation still holds: its replay workflow is running. A replay
 * that ended without giving it back (terminated) leaves a stale reservation: it is cleared here.
 * Without a Temporal client the reservation is taken to hold.
 */
async function reservationHolds(
  ctx: PrismaCtx & { temporal?: Client },
  letter: { id: string; replayId: string | null },
): Promise<boolean> {
  if (!letter.replayId) return false;
  if (!ctx.temporal) return true;
  const running = await ctx.temporal.workflow
    .getHandle(replayWorkflowId(letter.replayId))
    .describe()
    .then(
      (d) => d.status.name === 'RUNNING',
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      },
    );
  if (running) return true;
  await ctx.prisma.$executeRaw`
    UPDATE dead_letter SET replay_id = NULL, updated_at = now()
     WHERE id = ${letter.id}::uuid AND replay_id = ${letter.replayId} AND status = 'open'`;
  return false;
}

/**
 * Closes an open letter no replay holds (`retried` or `discarded`) and writes its audit entry, in
 * one transaction. Returns the letter, or undefined when it was no longer open and free.
 */
async function closeLetter(
  ctx: PrismaCtx,
  id: string,
  close: {
    status: 'retried' | 'discarded';
    actor: string;
    reason: string | null;
    action: string;
    details: Prisma.InputJsonObject;
  },
): Promise<DeadLetter | undefined> {
  return ctx.prisma.$transaction(async (tx) => {
    const n = await tx.$executeRaw`
      UPDATE dead_letter
         SET status = ${close.status}::dead_letter_status, closed_at = now(), closed_by = ${close.actor},
             close_reason = ${close.reason}, updated_at = now()
       WHERE id = ${id}::uuid AND status = 'open' AND replay_id IS NULL`;
    if (n !== 1) return undefined;
    await recordAudit(tx, {
      actor: close.actor,
      action: close.action,
      targetType: DEAD_LETTER_TARGET,
      targetId: id,
      reason: close.reason,
      details: close.details,
    });
    return tx.deadLetter.findUniqueOrThrow({ where: { id } });
  });
}

/** Why a conditional update matched nothing: the letter's state now. */
async function refusal(ctx: PrismaCtx, id: string, verb: 'retried' | 'discarded'): Promise<UserFacingError> {
  const now = await ctx.prisma.deadLetter.findUnique({
    where: { id },
    select: { status: true, replayId: true },
  });
  if (now?.status === 'open' && now.replayId) return reserved(id, now.replayId);
  return notOpen(id, now?.status ?? 'gone', verb);
}

export interface RetryDeadLetterOptions {
  /** Who asked. */
  actor: string;
  /** Why (kept on the letter and in the audit trail), e.g. "partner fixed the 422". */
  reason?: string;
  overrides?: RetryOverrides;
}

export interface RetriedDeadLetter {
  deadLetter: DeadLetterView;
  /** `fetch/fetch-records/<source>/<date>` */
  workflowId: string;
  /** Temporal run id of the execution started, or of the one joined. */
  runId: string;
  taskQueue: string;
  /**
   * True when the key turned out to be running or succeeded already: nothing new was started (its
   * stored pages are never fetched twice), and the letter is closed all the same.
   */
  joined: boolean;
  /** With `joined`: the Temporal status of the execution joined, e.g. RUNNING or COMPLETED. */
  joinedStatus?: string;
  overrides: RetryOverrides;
}

/**
 * Starts the run of an open dead letter's business key again, after its cause was fixed: its
 * business-key workflow is started anew (Temporal allows it after a failure) on the task queue of
 * the failed run's workflow (or `ctx.taskQueue` when that cannot be told), with `overrides` in its
 * input; the new execution takes the FetchRun up again and resumes from its stored pages, whose
 * idempotency keys are stable, so they are neither fetched nor written again. Then the letter
 * becomes `retried` (who, when, why) and an audit entry `dead_letter.retry` is written, in one
 * transaction conditional on the letter still being open. When the key turned out to be running
 * or succeeded already, nothing new is started, the execution is joined, and the letter is closed
 * all the same (`joined`).
 * @throws UserFacingError NOT_FOUND, INVALID_STATE (not open), RESERVED (a replay holds it),
 *   RUN_ACTIVE (its run is queued or running), INVALID_INPUT (actor, reason, overrides), the
 *   errors of {@link prepareFetch} (source unknown, disabled or paused…), CONFLICT (the letter changed
 *   while the run was started: the run is started, the letter was not touched).
 */
export async function retryDeadLetter(
  ctx: Pick<
    DurableFetchContext,
    'prisma' | 'temporal' | 'taskQueue' | 'maxFutureDays' | 'maxInputBytes' | 'now'
  >,
  id: string,
  options: RetryDeadLetterOptions,
): Promise<RetriedDeadLetter> {
  const actor = checkActor(options.actor);
  const reason = options.reason === undefined ? null : checkReason(options.reason);
  const overrides = checkOverrides(options.overrides ?? {});
  const letter = await loadLetter(ctx, id);
  if (letter.status !== 'open') throw notOpen(letter.id, letter.status, 'retried');
  if (letter.replayId && (await reservationHolds(ctx, letter))) throw reserved(letter.id, letter.replayId);
  if (OPEN_RUN_STATUSES.includes(letter.run.status)) {
    throw new UserFacingError(
      `run ${letter.run.id} of ${view(letter).businessKey} is ${letter.run.status}: it is being fetched already`,
      'RUN_ACTIVE',
    );
  }
  const prepared = await prepareFetch(ctx, {
    sourceId: letter.sourceId,
    date: dateText(letter.businessDate),
    requestedBy: 'cli',
    ...(overrides.pageSize === undefined ? {} : { pageSize: overrides.pageSize }),
  });
  if (prepared.workflowId !== letter.workflowId) {
    throw new UserFacingError(
      `dead letter ${letter.id} names workflow ${letter.workflowId}, not ${prepared.workflowId}: retry it by hand`,
      'INVALID_STATE',
    );
  }
  const input = {
    ...prepared.input,
    ...(overrides.pagesPerExecution === undefined ? {} : { pagesPerExecution: overrides.pagesPerExecution }),
  };
  const taskQueue = await taskQueueOf(ctx, letter.workflowId, letter.workflowRunId);
  const started = await launchFetch({ temporal: ctx.temporal, taskQueue }, { ...prepared, input });
  let joinedStatus: string | undefined;
  if (started.joined) {
    joinedStatus = await started.handle
      .describe()
      .then((d) => d.status.name)
      .catch(() => undefined);
  }
  const details: Prisma.InputJsonObject = {
    from: 'open',
    overrides: { ...overrides },
    workflowId: started.workflowId,
    workflowRunId: started.runId,
    taskQueue,
    joined: started.joined,
    ...(joinedStatus === undefined ? {} : { joinedStatus }),
  };
  const updated = await closeLetter(ctx, letter.id, {
    status: 'retried',
    actor,
    reason,
    action: 'dead_letter.retry',
    details,
  });
  if (!updated) {
    const why = await refusal(ctx, letter.id, 'retried');
    throw new UserFacingError(
      `${why.message}; meanwhile ${started.workflowId} was ${started.joined ? 'joined' : 'started'} (run ${started.runId})`,
      'CONFLICT',
    );
  }
  return {
    deadLetter: view(updated),
    workflowId: started.workflowId,
    runId: started.runId,
    taskQueue,
    joined: started.joined,
    ...(joinedStatus === undefined ? {} : { joinedStatus }),
    overrides,
  };
}

/** The task queue of the failed run's workflow (its worker runs this job), else the default. */
async function taskQueueOf(
  ctx: Pick<DurableFetchContext, 'temporal' | 'taskQueue'>,
  workflowId: string,
  runId: string | null,
): Promise<string> {
  try {
    return (await ctx.temporal.workflow.getHandle(workflowId, runId ?? undefined).describe()).taskQueue;
  } catch {
    return ctx.taskQueue;
  }
}

export interface DiscardDeadLetterOptions {
  /** Who decided. */
  actor: string;
  /** Why the run is given up (1..1000 characters); kept on the letter and in the audit trail. */
  reason: string;
}

/**
 * Gives an open dead letter up: it becomes `discarded` with who, when and why, and an audit entry
 * `dead_letter.discard` is written in the same transaction. Starts nothing; the run stays as it is.
 * @throws UserFacingError NOT_FOUND, INVALID_STATE (not open), RESERVED (a replay holds it),
 *   INVALID_INPUT (empty or too long reason or actor).
 */
export async function discardDeadLetter(
  ctx: PrismaCtx & { temporal?: Client },
  id: string,
  options: DiscardDeadLetterOptions,
): Promise<DeadLetterView> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  const letter = await loadLetter(ctx, id);
  if (letter.status !== 'open') throw notOpen(letter.id, letter.status, 'discarded');
  if (letter.replayId && (await reservationHolds(ctx, letter))) throw reserved(letter.id, letter.replayId);
  const updated = await closeLetter(ctx, letter.id, {
    status: 'discarded',
    actor,
    reason,
    action: 'dead_letter.discard',
    details: { from: 'open', runStatus: letter.run.status },
  });
  if (!updated) throw await refusal(ctx, letter.id, 'discarded');
  return view(updated);
}
