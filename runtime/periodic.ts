/**
 * A periodic background pass inside a long-running process (the cleanup of expired rows, the
 * stuck-run sweep): never overlapping, jittered, stopped cleanly on shutdown.
 */

export interface PeriodicOptions {
  /** Time between the end of one pass and the start of the next; 0 (or less) disables it. */
  intervalMs: number;
  /** Delay before the first pass, so it does not compete with the process's start. */
  initialDelayMs: number;
}

export interface Periodic {
  /** Cancels the next pass and resolves once a pass in progress has finished. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` after `initialDelayMs`, then `intervalMs` after each pass ends, each delay plus up
 * to 10% jitter so processes started together do not run in lockstep. Passes never overlap. `pass`
 * must handle its own errors (a rejection is swallowed so the schedule goes on; log inside it).
 * Timers are unref'd: they never keep the process alive.
 */
export function startPeriodic(pass: () => Promise<void>, options: PeriodicOptions): Periodic {
  const { intervalMs, initialDelayMs } = options;
  if (intervalMs <= 0) return { stop: () => Promise.resolve() };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(tick, delayMs * (1 + Math.random() * 0.1));
    timer.unref();
  };
  const tick = () => {
    running = pass()
      .catch(() => undefined)
      .finally(() => {
        running = undefined;
        schedule(intervalMs);
      });
  };

  schedule(initialDelayMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
