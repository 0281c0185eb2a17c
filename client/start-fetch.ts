/**
 * `startFetch`: start — or join — the run of one business key (the first step of a run: docs/runs.md).
 */
import { randomUUID } from 'node:crypto';
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { checkBusinessDate, dateInTimeZone } from '../contract/business-date.ts';
import { isBusinessDate, isCorrelationId, isSourceId, workflowIdFor } from '../contract/business-key.ts';
import type { fetchRunWorkflow } from '../workflows/fetch-records.ts';
import { checkFetchInput } from '../workflows/input-check.ts';
import type { FetchStatus } from '../workflows/outcome.ts';
import { RUN_WORKFLOW_TYPE } from '../workflows/run-type.ts';
import { MAX_PAGE_SIZE } from '../contract/input-limits.ts';
import { DEFAULT_MAX_INPUT_BYTES, type FetchRecordsInput, type RequestedBy } from '../contract/types.ts';

export const SEARCH_KEYS = {
  source: defineSearchAttributeKey('FetchSource', SearchAttributeType.KEYWORD),
  date: defineSearchAttributeKey('FetchDate', SearchAttributeType.KEYWORD),
  jobType: defineSearchAttributeKey('JobType', SearchAttributeType.KEYWORD),
  status: defineSearchAttributeKey('FetchStatus', SearchAttributeType.KEYWORD),
};

/** What the client API needs: a Temporal client, the database, and the worker's task queue. */
export interface DurableFetchContext {
  temporal: Client;
  prisma: PrismaClient;
  taskQueue: string;
  /** Future-date policy: days after today (source timezone) a run may be started for. Default 0. */
  maxFutureDays?: number;
  /** Largest workflow input accepted, in bytes of JSON (R12d). Default {@link DEFAULT_MAX_INPUT_BYTES}. */
  maxInputBytes?: number;
  now?: () => Date;
}

// The workflow checks its input against the same bounds (a start may bypass this client).
export { MAX_PAGE_SIZE };

export interface StartFetchRequest {
  sourceId: string;
  /** `YYYY-MM-DD`; default: today in the source's timezone. */
  date?: string;
  correlationId?: string;
  requestedBy?: RequestedBy;
  /** Records per stored page, 1..{@link MAX_PAGE_SIZE}; default: the source's page size. */
  pageSize?: number;
}

export interface StartedFetch {
  workflowId: string;
  /** Temporal run id of the execution started or joined. */
  runId: string;
  businessDate: string;
  /** True when a run of this business key already existed (running or succeeded) and was joined. */
  joined: boolean;
  handle: WorkflowHandle<typeof fetchRunWorkflow>;
}

/** A validated request: the source exists, is enabled and not paused, the date is allowed. */
export interface PreparedFetch {
  /** The source's job. */
  jobType: string;
  sourceId: string;
  businessDate: string;
  workflowId: string;
  /** The workflow's input, exactly as it will be started (ids only, size-checked). */
  input: FetchRecordsInput;
}

function workflowInput(sourceId: string, businessDate: string, req: StartFetchRequest): FetchRecordsInput {
  return {
    sourceId,
    businessDate,
    correlationId: req.correlationId ?? randomUUID(),
    requestedBy: req.requestedBy ?? 'app-client',
    ...(req.pageSize ? { pageSize: req.pageSize } : {}),
  };
}

/**
 * Validates a request against the database and the future-date policy, without starting anything.
 * Read-only.
 * @throws UserFacingError INVALID_INPUT (malformed source id or date, date beyond the future
 *   policy), UNKNOWN_SOURCE, SOURCE_REMOVED, SOURCE_DISABLED, SOURCE_PAUSED (an operator paused
 *   the source).
 */
export async function prepareFetch(
  ctx: Pick<DurableFetchContext, 'maxFutureDays' | 'maxInputBytes' | 'now'> & {
    /** The client, or a transaction's client (enqueueFetch validates inside the caller's transaction). */
    prisma: Pick<PrismaClient, 'source'>;
  },
  req: StartFetchRequest,
): Promise<PreparedFetch> {
  if (!isSourceId(req.sourceId)) {
    throw new UserFacingError(
      `invalid source id '${req.sourceId}': use a-z, 0-9, '-' and '_'`,
      'INVALID_INPUT',
    );
  }
  if (
    req.pageSize !== undefined &&
    !(Number.isInteger(req.pageSize) && req.pageSize >= 1 && req.pageSize <= MAX_PAGE_SIZE)
  ) {
    throw new UserFacingError(
      `invalid page size ${req.pageSize}: expected an integer 1..${MAX_PAGE_SIZE}`,
      'INVALID_INPUT',
    );
  }
  if (req.correlationId !== undefined && !isCorrelationId(req.correlationId)) {
    throw new UserFacingError(
      'invalid correlation id: 1-128 characters of A-Z a-z 0-9 . _ : -',
      'INVALID_INPUT',
    );
  }
  if (req.date !== undefined && !isBusinessDate(req.date)) {
    throw new UserFacingError(`invalid date '${req.date}': expected YYYY-MM-DD`, 'INVALID_INPUT');
  }
  const source = await ctx.prisma.source.findUnique({ where: { id: req.sourceId } });
  if (!source) {
    const known = await ctx.prisma.source.findMany({
      select: { id: true },
      orderBy: { id: 'asc' },
      take: 20,
    });
    const list = known.map((s) => s.id).join(', ') || 'none';
    throw new UserFacingError(`unknown source '${req.sourceId}' (known sources: ${list})`, 'UNKNOWN_SOURCE');
  }
  if (source.removedAt) {
    // Removed sources keep their row (their runs point at it) but never run again.
    throw new UserFacingError(
      `source '${source.id}' was removed ${source.removedAt.toISOString()}${source.removedBy ? ` by ${source.removedBy}` : ''}: it runs no more`,
      'SOURCE_REMOVED',
    );
  }
  if (!source.enabled) throw new UserFacingError(`source '${source.id}' is disabled`, 'SOURCE_DISABLED');
  if (source.pausedAt) {
    // An operator paused it (`durable-fetch sources pause`): nothing new starts until it is resumed.
    const why = source.pausedReason ? ` (${source.pausedReason.replace(/\s+/g, ' ').trim()})` : '';
    throw new UserFacingError(
      `source '${source.id}' is paused since ${source.pausedAt.toISOString()}${why}: resume it first (\`durable-fetch sources resume ${source.id}\`)`,
      'SOURCE_PAUSED',
    );
  }
  const now = (ctx.now ?? (() => new Date()))();
  const businessDate = req.date ?? dateInTimeZone(now, source.timezone);
  const check = checkBusinessDate(businessDate, {
    now,
    timeZone: source.timezone,
    maxFutureDays: ctx.maxFutureDays ?? 0,
  });
  if (!check.ok) throw new UserFacingError(check.reason, 'INVALID_INPUT');
  const jobType = source.jobType;
  const workflowId = workflowIdFor({ jobType, sourceId: source.id, businessDate });
  const input = { jobType, ...workflowInput(source.id, businessDate, req) };
  // The workflow's own check, so that the client never starts what the workflow would refuse.
  const checked = checkFetchInput(input, { workflowId });
  if (!checked.ok) throw new UserFacingError(checked.message, 'INVALID_INPUT');
  const bytes = Buffer.byteLength(JSON.stringify(input));
  const maxBytes = ctx.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
  if (bytes > maxBytes) {
    throw new UserFacingError(
      `workflow input of ${bytes} bytes exceeds the maximum of ${maxBytes}`,
      'INVALID_INPUT',
    );
  }
  return { jobType, sourceId: source.id, businessDate, workflowId, input };
}

/**
 * Starts the run of `(the source's job type, sourceId, date)`, or joins the existing one: at most one
 * workflow per business key runs at a time, and a key that already succeeded is joined, not
 * re-run. A key whose last run failed, was cancelled or terminated is started afresh (its stored
 * pages are not fetched again). Not a side effect on partners by itself.
 * @throws UserFacingError as {@link prepareFetch}; Temporal connection errors.
 */
export async function startFetch(ctx: DurableFetchContext, req: StartFetchRequest): Promise<StartedFetch> {
  return launchFetch(ctx, await prepareFetch(ctx, req));
}

/**
 * Temporal start options of a prepared run: its business-key workflow id and search attributes.
 * `conflictPolicy` decides what happens while a run of the key is open: FAIL (then callers catch
 * "already started" and join) or USE_EXISTING (the server hands back the open run).
 */
export function fetchStartOptions(
  prepared: PreparedFetch,
  taskQueue: string,
  conflictPolicy: 'FAIL' | 'USE_EXISTING',
  rerunCompleted = false,
): WorkflowStartOptions<typeof fetchRunWorkflow> {
  const { jobType, sourceId, businessDate, workflowId, input } = prepared;
  return {
    workflowId,
    taskQueue,
    args: [input],
    workflowIdConflictPolicy: conflictPolicy,
    // A key that succeeded is never run again; a failed, cancelled or terminated one may be —
    // and one whose completion the database lost (`rerunCompleted`: dlq retry of such a run).
    workflowIdReusePolicy: rerunCompleted ? 'ALLOW_DUPLICATE' : 'ALLOW_DUPLICATE_FAILED_ONLY',
    typedSearchAttributes: [
      { key: SEARCH_KEYS.source, value: sourceId },
      { key: SEARCH_KEYS.date, value: businessDate },
      { key: SEARCH_KEYS.jobType, value: jobType },
      // Shown from the start (free: Temporal Cloud bills an upsert, not attributes given at start);
      // the run upserts it only when it changes.
      { key: SEARCH_KEYS.status, value: 'running' satisfies FetchStatus },
    ],
    staticSummary: `${jobType} ${sourceId} ${businessDate}`,
    // The source is the run's fairness key (R8): its workflow tasks and activities take turns
    // with other sources' on the task queue, so one source's backlog of runs starves no other.
    priority: { fairnessKey: sourceId },
  };
}

/** Starts or joins the workflow of a {@link prepareFetch}ed request. */
export async function launchFetch(
  ctx: Pick<DurableFetchContext, 'temporal' | 'taskQueue'>,
  prepared: PreparedFetch,
  { rerunCompleted = false }: { rerunCompleted?: boolean } = {},
): Promise<StartedFetch> {
  const { businessDate, workflowId } = prepared;
  try {
    // FAIL + catching "already started" below is how we learn whether we joined.
    const handle = await ctx.temporal.workflow.start<typeof fetchRunWorkflow>(
      RUN_WORKFLOW_TYPE,
      fetchStartOptions(prepared, ctx.taskQueue, 'FAIL', rerunCompleted),
    );
    return { workflowId, runId: handle.firstExecutionRunId, businessDate, joined: false, handle };
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    const handle = ctx.temporal.workflow.getHandle<typeof fetchRunWorkflow>(workflowId);
    const described = await handle.describe();
    return { workflowId, runId: described.runId, businessDate, joined: true, handle };
  }
}
