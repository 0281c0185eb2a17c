/**
 * `recordInvalidStart`: a start the workflow refused for its input (a Web UI or CLI start that
 * bypassed the client) is recorded against the business key its workflow id names, as a dead
 * letter operators see and handle like any other (R11), instead of a failed workflow alone.
 */
import { claimRun, insertRunIfMissing } from '../../db/fetch-run.ts';
import { findSource } from '../../db/sources.ts';
import {
  dateColumn,
  idempotencyKeyFor,
  isBusinessDate,
  isCorrelationId,
  isJobType,
  isSourceId,
  workflowIdFor,
} from '../../contract/business-key.ts';
import { INVALID_WORKFLOW_INPUT } from '../../contract/input-limits.ts';
import type { InvalidStartInput, InvalidStartResult } from '../../contract/types.ts';
import type { ActivityDeps } from '../deps.ts';
import { failure } from '../errors.ts';
import { finishRunRow, observeRunFinished } from './finish-run.ts';

/**
 * Creates the key's run if missing, then claims it under the claim's own rules (free: queued,
 * owned by this workflow id, an expired lease, or ended and started again by this workflow id)
 * and ends it at once as `dead_lettered` with `InvalidInput` `INVALID_WORKFLOW_INPUT` and one
 * dead letter. Nothing is written when the source is unknown, removed or runs another job, or
 * when another owner holds the run or it succeeded: a refused start never takes a live or
 * finished run from its owner. Idempotent per execution: a repeat after the claim reuses its
 * token; a repeat after the end finds the run ended (`run-not-free`) and writes nothing.
 * @throws ApplicationFailure InvalidInput (the workflow passed a malformed key or ids: a bug).
 */
export function createRecordInvalidStart(deps: ActivityDeps) {
  return async function recordInvalidStart(input: InvalidStartInput): Promise<InvalidStartResult> {
    const { key } = input;
    if (
      !isJobType(key.jobType) ||
      !isSourceId(key.sourceId) ||
      !isBusinessDate(key.businessDate) ||
      input.workflowId !== workflowIdFor(key) ||
      !isCorrelationId(input.correlationId)
    ) {
      throw failure('InvalidInput', INVALID_WORKFLOW_INPUT, 'recordInvalidStart: malformed key or ids');
    }
    const source = await findSource(deps.prisma, key.sourceId);
    if (!source || source.removedAt || source.jobType !== key.jobType) {
      return { recorded: false, deadLetterId: null, skipped: 'no-source' };
    }
    const runKey = { ...key, date: dateColumn(key.businessDate) };
    const claimant = { workflowId: input.workflowId, workflowRunId: input.workflowRunId };
    await insertRunIfMissing(deps.prisma, runKey, {
      ...claimant,
      payload: JSON.stringify({ sourceId: key.sourceId, businessDate: key.businessDate }),
      idempotencyKey: idempotencyKeyFor(key),
      scheduledAt: new Date(input.startedAt),
      correlationId: input.correlationId,
    });
    const claimed = await claimRun(deps.prisma, runKey, claimant, deps.leaseTtlMs / 1000);
    if (!claimed?.lease_token) return { recorded: false, deadLetterId: null, skipped: 'run-not-free' };
    const finish = {
      fetchRunId: claimed.id,
      leaseToken: claimed.lease_token,
      status: 'dead_lettered' as const,
      errorType: 'InvalidInput',
      errorCode: INVALID_WORKFLOW_INPUT,
      errorMessage: input.message,
    };
    const row = await finishRunRow(deps.prisma, finish);
    observeRunFinished(deps, finish, row);
    return { recorded: row.finished, deadLetterId: row.deadLetterId };
  };
}
