/**
 * What a fetch-records run does with an input its checker refuses (workflows/input-check.ts): it
 * ends at once as a failed workflow with a non-retryable `InvalidInput` failure — never a crash
 * loop of failing workflow tasks, never a claim, a page or a downstream call — after recording
 * the refusal as a dead letter of the business key its workflow id names, when that key's run
 * may take one. Workflow code only.
 */
import { ApplicationFailure, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { isCorrelationId } from '../contract/business-key.ts';
import { checkFetchInput } from './input-check.ts';
import { INVALID_WORKFLOW_INPUT } from '../contract/input-limits.ts';
import { setStatus } from './outcome.ts';
import { RETRY_PRESETS } from '../contract/retry-presets.ts';

const record = proxyActivities<Pick<FetchActivities, 'recordInvalidStart'>>(RETRY_PRESETS.recordOutcome);

/**
 * Patch id: runs started before the check took the input as it was. Asked only for a refused
 * input, so a valid input issues exactly the commands it did before.
 */
const INPUT_CHECKED = 'workflow-input-checked';

/**
 * Returns when `input` is valid. Otherwise records the refusal against the key the workflow id
 * names (retried until the database answers: the key's row never stays half-written), then
 * throws. Call it before anything else the workflow does.
 * @throws ApplicationFailure InvalidInput (non-retryable), code `INVALID_WORKFLOW_INPUT`, with the
 *   refused fields in its details.
 */
export async function refuseInvalidInput(input: unknown): Promise<void> {
  const info = workflowInfo();
  const check = checkFetchInput(input, {
    workflowId: info.workflowId,
    continuedFromExecutionRunId: info.continuedFromExecutionRunId,
  });
  // An execution that started before the check replays as it ran then.
  if (check.ok || !patched(INPUT_CHECKED)) return;
  setStatus('dead_lettered');
  // Bounded: an input may carry any number of unknown fields.
  const fields = check.problems.slice(0, 20).map((p) => p.field);
  if (check.key) {
    const given = (input as { correlationId?: unknown } | null)?.correlationId;
    await record.recordInvalidStart({
      key: check.key,
      workflowId: info.workflowId,
      workflowRunId: info.runId,
      startedAt: info.runStartTime.toISOString(),
      // The run's row needs one: the input's when it is a valid one, else this execution's run id.
      correlationId: typeof given === 'string' && isCorrelationId(given) ? given : info.runId,
      message: check.message,
    });
  }
  throw ApplicationFailure.create({
    type: 'InvalidInput',
    message: check.message,
    nonRetryable: true,
    details: [{ code: INVALID_WORKFLOW_INPUT, fields }],
  });
}
