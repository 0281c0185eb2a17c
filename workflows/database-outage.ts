/**
 * Our own database being unavailable — a failover, a maintenance window, a restart — pauses a run
 * instead of failing it. Activities retry `DatabaseUnavailable` within their preset; a step that
 * still ends with it is run again after a wait (every step is repeat-safe), for up to
 * {@link DATABASE_OUTAGE_WAITS} waits, after which the failure ends the run like any other (its
 * end is then recorded once the database is back: the `recordOutcome` preset never gives up).
 */
import { ApplicationFailure, log, patched, sleep } from '@temporalio/workflow';

/** Wait between one try of a step and the next while the database is unavailable. */
export const DATABASE_WAIT = '30 seconds';

/** Waits per step at most: an hour of outage, on top of what the activity's own retries cover. */
export const DATABASE_OUTAGE_WAITS = 120;

/** Patch id of this behaviour: histories recorded before it fail the run at once instead. */
const PATCH = 'outlast-database-outage';

/** Runs `step`, and again after {@link DATABASE_WAIT} each time it fails with DatabaseUnavailable. */
export async function outlastingDatabaseOutages<T>(what: string, step: () => Promise<T>): Promise<T> {
  for (let waits = 0; ; waits++) {
    try {
      return await step();
    } catch (err) {
      if (!fromDatabaseOutage(err) || waits >= DATABASE_OUTAGE_WAITS) throw err;
      if (!patched(PATCH)) throw err;
      log.warn('database unavailable: the step runs again after a wait', { step: what, waits: waits + 1 });
      await sleep(DATABASE_WAIT);
    }
  }
}

/**
 * Whether a step failed because our database was unavailable: its failure, or the last attempt's
 * failure behind Temporal's own timeout (an attempt to a database that does not answer can run
 * into the step's deadline).
 */
function fromDatabaseOutage(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; depth++) {
    if (e instanceof ApplicationFailure) return e.type === 'DatabaseUnavailable';
    e = e.cause;
  }
  return false;
}
