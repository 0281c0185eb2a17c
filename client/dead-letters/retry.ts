/** `dlq retry`: start an open dead letter's business key again, after its cause was fixed. */
import type { Prisma } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { checkActor } from '../audit.ts';
import { launchFetch, prepareFetch, type DurableFetchContext } from '../start-fetch.ts';
import { checkOverrides, type RetryOverrides } from './overrides.ts';
import {
  checkReason,
  closeLetter,
  loadLetter,
  notOpen,
  refusal,
  reservationHolds,
  reserved,
} from './state-changes.ts';
import { dateText, type DeadLetterView, view } from './view.ts';
import { OPEN_RUN_STATUSES } from '../runs.ts';
import { COMPLETED_UNRECORDED } from '../../contract/error-types.ts';

/** Run statuses during which the key is being fetched already: a retry would only join it. */

export interface RetryDeadLetterOptions {
  /** Who asked. */
  actor: string;
  /** Why (kept on the letter and in the audit trail), e.g. "partner fixed the 422". */
  reason?: string;
  overrides?: RetryOverrides;
}

export interface RetriedDeadLetter {
  deadLetter: DeadLetterView;
  /** `fetch/<jobType>/<source>/<date>` */
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
 * all the same (`joined`) — except for a run whose completed workflow the database no longer
 * knows of (`WORKFLOW_COMPLETED_UNRECORDED`): its key is started again.
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
  // Temporal completed the key's workflow, but the database lost what it did (restored to an
  // older point): the key runs again, resuming from the pages the database still holds.
  const rerunCompleted = letter.errorCode === COMPLETED_UNRECORDED;
  const started = await launchFetch(
    { temporal: ctx.temporal, taskQueue },
    { ...prepared, input },
    { rerunCompleted },
  );
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
