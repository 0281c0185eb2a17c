/**
 * Crash points (R12a): named places where a worker kills itself with SIGKILL, so tests can prove
 * that a process dying at each step of a run loses nothing and duplicates nothing. Test-only and
 * off by default: armed by DURABLE_FETCH_CRASH_POINT on a worker or publisher process (runtime/config.ts).
 */

/** Crash points of a worker's activities. */
export const WORKER_CRASH_POINTS = [
  /** fetchPage: the partner answered, nothing of it is staged yet. */
  'after-fetch',
  /** storePage: everything is written inside the transaction, which is not committed. */
  'before-commit',
  /** storePage: committed, the activity has not reported completion to Temporal. */
  'after-commit',
  /** completeRun: the run is marked succeeded and committed, not yet reported. */
  'after-complete',
] as const;

/** Crash points of a worker's downstream (non-idempotent) step. */
export const DOWNSTREAM_CRASH_POINTS = [
  /** submitSummary: the partner created the submission; its outcome is not recorded yet. */
  'after-submit',
] as const;

/** Crash points of a worker's OAuth2 token refresh (activities/credentials/token-provider.ts). */
export const CREDENTIAL_CRASH_POINTS = [
  /** A token endpoint answered (a refresh token may have rotated); the answer is not saved yet. */
  'credential-after-token-response',
] as const;

/** Crash points of the outbox publisher. */
export const PUBLISHER_CRASH_POINTS = [
  /** A sink acknowledged an event; the publisher has not marked it published. */
  'publisher-after-ack',
] as const;

export const CRASH_POINTS = [
  ...WORKER_CRASH_POINTS,
  ...DOWNSTREAM_CRASH_POINTS,
  ...CREDENTIAL_CRASH_POINTS,
  ...PUBLISHER_CRASH_POINTS,
] as const;

export type WorkerCrashPoint = (typeof WORKER_CRASH_POINTS)[number];
export type CrashPoint = (typeof CRASH_POINTS)[number];

export function isCrashPoint(value: string): value is CrashPoint {
  return (CRASH_POINTS as readonly string[]).includes(value);
}

/** Kills this process at once, like a power cut, when `point` is the armed one. */
export function crashPoint(armed: CrashPoint | undefined, point: CrashPoint): void {
  if (armed !== point) return;
  process.stderr.write(`[durable-fetch] crash point ${point}: SIGKILL\n`);
  process.kill(process.pid, 'SIGKILL');
}
