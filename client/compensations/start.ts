/**
 * Starting a claim's compensation workflow from outside a workflow (`compensations retry`, the
 * stuck-run sweep) the way the run's own workflow starts it: the claim's workflow id, a new
 * execution allowed after a closed one, the run's search attributes.
 */
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { compensationWorkflowIdFor, type JobType } from '../../contract/business-key.ts';
import type { compensateRunWorkflow } from '../../workflows/compensate-run.ts';
import type { CompensateRunInput } from '../../contract/types.ts';
import { SEARCH_KEYS } from '../start-fetch.ts';

/** Workflow id of the compensation of `input`'s claim (`compensate/<jobType>/<source>/<date>/r<round>`). */
export function compensationIdOf(
  jobType: JobType,
  input: Pick<CompensateRunInput, 'sourceId' | 'businessDate' | 'round'>,
) {
  return compensationWorkflowIdFor(
    { jobType, sourceId: input.sourceId, businessDate: input.businessDate },
    input.round,
  );
}

/**
 * Starts `compensateRunWorkflow(input)` on `taskQueue` (a queue whose workers know it: the run's
 * own). Not idempotent by itself: while an execution of the id is open it throws
 * WorkflowExecutionAlreadyStartedError, which callers decide about; after one closed, a new one
 * starts (ALLOW_DUPLICATE) and settles whatever is still unsettled.
 * @throws the client's errors (WorkflowExecutionAlreadyStartedError, connection errors).
 */
export async function startCompensationWorkflow(
  temporal: Client,
  jobType: JobType,
  input: CompensateRunInput,
  taskQueue: string,
  startedBy: string,
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof compensateRunWorkflow>> {
  return temporal.workflow.start<typeof compensateRunWorkflow>('compensateRunWorkflow', {
    workflowId: compensationIdOf(jobType, input),
    taskQueue,
    args: [input],
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: [
      { key: SEARCH_KEYS.source, value: input.sourceId },
      { key: SEARCH_KEYS.date, value: input.businessDate },
      { key: SEARCH_KEYS.jobType, value: jobType },
      { key: SEARCH_KEYS.status, value: 'compensating' },
    ],
    staticSummary: `compensate ${jobType} ${input.sourceId} ${input.businessDate} (${startedBy})`,
  });
}
