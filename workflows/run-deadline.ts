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

/** Patch id: histories recorded before it started the deadline's timer as the run began. */
const ARMED_WHEN_NEAR = 'run-deadline-armed-when-near';

/**
 * How long after its command a step may still start its wait: the workflow task that sends the
 * command completes, and the server starts the step, this much later at most in practice. A
 * late workflow task (every worker down) only delays when the deadline is seen, as the timer's
 * own firing would be delayed.
 */
export const ARMING_SLACK_MS = 60_000;

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
 * Whether the deadline's timer must be started before a step that may wait up to `boundMs` (its
 * schedule-to-close, a timer's duration; none: no bound known), `remainingMs` before the
 * deadline: when the step could end past the deadline. A timer is a billed action on Temporal
 * Cloud, and a run of the default 24 h deadline that takes minutes never needs one; every step a
 * run waits on is checked first (workflows/interceptors.ts), so the timer is running before any
 * wait could outlast the deadline, and the deadline is enforced as exactly as an eager timer.
 */
export function mustArm(remainingMs: number, boundMs: number | undefined): boolean {
  return boundMs === undefined || !Number.isFinite(boundMs) || remainingMs <= boundMs + ARMING_SLACK_MS;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A step option's duration in ms: a number, or the `ms` text Temporal takes ('10 minutes',
 * '30s'); none for text of another form, which {@link mustArm} then takes as unbounded.
 */
export function durationMs(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return undefined;
  const m =
    /^(\d+(?:\.\d+)?)\s*(ms|milliseconds?|msecs?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)?$/i.exec(
      value.trim(),
    );
  if (!m) return undefined;
  const unit = (m[2] ?? 'ms').toLowerCase();
  const key = unit.startsWith('ms') || unit.startsWith('milli') ? 'ms' : unit[0]!;
  return Number(m[1]) * UNIT_MS[key]!;
}

// Per execution (Temporal gives every workflow execution its own module globals): the deadline
// of the work in progress whose timer is not started yet, and whether the step checks are there.
let pending: { deadlineAt: string; arm: () => void } | undefined;
let stepsChecked = false;

/**
 * Called by the workflow interceptors as they are made: every step (activity, local activity,
 * timer, child) goes through {@link beforeStep}. Without them (a bundle built without the
 * interceptor module), the deadline's timer starts with the run, as before the lazy timer.
 */
export function checkStepsAgainstDeadline(): void {
  stepsChecked = true;
}

/**
 * Before a step that may wait up to `boundMs` (none: unbounded): starts the deadline's timer if
 * the step could end past the deadline. Only adds a command (the timer) when it must: deterministic.
 */
export function beforeStep(boundMs: number | undefined): void {
  if (pending === undefined || !mustArm(Date.parse(pending.deadlineAt) - Date.now(), boundMs)) return;
  const { arm } = pending;
  pending = undefined;
  arm();
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
  let timer: CancellationScope | undefined;
  const arm = () => {
    const left = Date.parse(deadlineAt) - Date.now();
    const pass = () => {
      passed = true;
      scope.cancel();
    };
    // Armed late, at a step that starts past the deadline: that step is refused at once.
    if (left <= 0) return pass();
    // A child of the run's own scope, not of the step's (which may be non-cancellable).
    timer = new CancellationScope({ cancellable: true, parent: outer });
    void timer.run(() => sleep(left)).then(pass, () => undefined);
  };
  if (stepsChecked && patched(ARMED_WHEN_NEAR)) pending = { deadlineAt, arm };
  else arm();
  try {
    return await scope.run(work);
  } catch (err) {
    // Past the deadline, whatever `work` ended with (its cancellation, a failure of the step the
    // cancel interrupted, a continue-as-new) was the deadline's doing — unless the operator cancelled.
    if (passed && !outer.consideredCancelled) throw deadlineExceeded(deadlineAt);
    throw err;
  } finally {
    // The run is over (or continues as new): its timer has nothing left to bound.
    pending = undefined;
    if (!passed) timer?.cancel();
  }
}
