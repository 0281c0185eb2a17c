/**
 * A run's maximum run time (R9 "every job has a maximum run time"): fixed as an absolute time when
 * the run is claimed (the source's `maxRunTimeMs` from then), carried across continue-as-new, and
 * covering everything the run waits on — partner calls and their retries, pauses, database
 * outages, the downstream step. When it passes, the work in flight is cancelled and the run fails
 * with `DeadlineExceeded` (code RUN_DEADLINE), so that it ends as a dead letter and its downstream
 * effects are compensated like any other failure. Workflow code only.
 */
import { ApplicationFailure, CancellationScope, patched, sleep } from '@temporalio/workflow';

/** Patch id: histories recorded before it had no deadline timer. */
const RUN_DEADLINE = 'run-deadline';

/** Safe code of the failure, on the dead letter. */
export const RUN_DEADLINE_CODE = 'RUN_DEADLINE';

/** The run's deadline (ISO) when claimed now with `maxRunTimeMs`; none for claims that carry none. */
export function deadlineFrom(maxRunTimeMs: number | undefined): { deadlineAt?: string } {
  // Date.now() is the workflow task's time here: deterministic, and the clock timers run on.
  return maxRunTimeMs === undefined ? {} : { deadlineAt: new Date(Date.now() + maxRunTimeMs).toISOString() };
}

/** The non-retryable failure of a run whose deadline passed. */
function deadlineExceeded(deadlineAt: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'DeadlineExceeded',
    nonRetryable: true,
    message: `the run passed its maximum run time (deadline ${deadlineAt}); what it was doing was cancelled`,
    details: [{ code: RUN_DEADLINE_CODE }],
  });
}

/**
 * Runs `work` until `deadlineAt` (none: no bound). Past it, `work`'s scope is cancelled: the
 * activity in flight gets a cancel (a partner call is aborted), a timer or a pause wait ends, and
 * this throws `DeadlineExceeded`. Steps `work` runs non-cancellable (claim, intent, completeRun)
 * still finish. An operator's cancel of the workflow stays a cancel, even when both happen: what
 * the operator asked for decides.
 */
export async function withinDeadline<T>(deadlineAt: string | undefined, work: () => Promise<T>): Promise<T> {
  if (deadlineAt === undefined || !patched(RUN_DEADLINE)) return work();
  const outer = CancellationScope.current();
  const remaining = Date.parse(deadlineAt) - Date.now();
  // Carried over from an earlier execution, already past: nothing more starts.
  if (remaining <= 0) throw deadlineExceeded(deadlineAt);
  const scope = new CancellationScope();
  let passed = false;
  const timer = new CancellationScope();
  void timer
    .run(() => sleep(remaining))
    .then(
      () => {
        passed = true;
        scope.cancel();
      },
      () => undefined,
    );
  try {
    return await scope.run(work);
  } catch (err) {
    // Past the deadline, whatever `work` ended with (its cancellation, a failure of the step the
    // cancel interrupted, a continue-as-new) was the deadline's doing — unless the operator cancelled.
    if (passed && !outer.consideredCancelled) throw deadlineExceeded(deadlineAt);
    throw err;
  } finally {
    // The run is over (or continues as new): its timer has nothing left to bound.
    if (!passed) timer.cancel();
  }
}
