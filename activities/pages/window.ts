/**
 * An incremental source's run in the activities: the window it reads, fixed before its first
 * partner call (activities/job-api/watermark.ts `windowFor`, db/pages/watermark.ts), and what each
 * of its pages carries to the watermark.
 */
import type { PageFence } from '../../db/fence.ts';
import type { PageStart } from '../../db/pages/stored-page.ts';
import { findWatermark, fixRunWindow, type PageWatermark } from '../../db/pages/watermark.ts';
import type { EngineSql } from '../../db/transaction.ts';
import type { FetchPageInput } from '../../contract/types.ts';
import { failure } from '../errors.ts';
import { highestValue, type RunWindow, type WatermarkSpec, windowFor } from '../job-api/watermark.ts';
import { lostLease } from '../run/lease.ts';

/**
 * The window of an incremental source's run: the one it fixed before (every attempt, execution and
 * replay of a run reads the same window), or the one it fixes now from the source's watermark.
 * @throws ApplicationFailure LeaseLost when the run is no longer ours.
 */
export async function runWindow(
  db: EngineSql,
  fence: PageFence,
  start: PageStart,
  spec: WatermarkSpec<unknown>,
  input: FetchPageInput,
  timezone: string,
  now: Date,
): Promise<RunWindow> {
  if (start.window !== undefined) return { kind: spec.kind, ...start.window };
  const run = { businessDate: input.businessDate, timezone };
  let watermark = start.watermark;
  for (let tries = 0; tries < WINDOW_TRIES; tries++) {
    const { kind: _, ...window } = windowFor(spec, watermark, run, now);
    const fixed = await fixRunWindow(db, fence, window, watermark?.value ?? null);
    if (fixed === undefined) throw await lostLease(db, fence);
    if (fixed !== 'stale') return { kind: spec.kind, ...fixed };
    // The watermark moved since it was read (another run's page, an operator): read it again.
    watermark = await findWatermark(db, input.sourceId);
  }
  // Retried as the database preset says: a watermark that moves between two statements this often
  // is a burst of pages of the source's other runs, over in moments.
  throw failure(
    'DatabaseUnavailable',
    'WATERMARK_CONTENDED',
    `source ${input.sourceId}: its watermark kept moving while this run fixed its window`,
  );
}

/** Reads of the watermark a run makes to fix its window before it gives up the attempt. */
const WINDOW_TRIES = 5;

/**
 * A page in the watermark: the highest cursor value of its records (what the page's transaction
 * may move the watermark to: only what it stores), `last` when it is the run's last page.
 * @throws ApplicationFailure InvalidResponse `WATERMARK_MISSING` for a record without a cursor value
 *   of the source's kind (named by `idOf`): it could not be placed in a window, and a later run
 *   could miss it.
 */
export function pageWatermarkOf<R>(
  spec: WatermarkSpec<R>,
  records: readonly R[],
  idOf: (record: R, index: number) => string,
  last: boolean,
  what: string,
): PageWatermark {
  const { highest, missing } = highestValue(spec, records);
  if (missing !== undefined) {
    throw failure(
      'InvalidResponse',
      'WATERMARK_MISSING',
      `${what}: record ${idOf(records[missing] as R, missing)} has no cursor value of kind ${spec.kind} (the source's incremental cursor field)`,
    );
  }
  return { kind: spec.kind, highest, ordered: spec.ordered, last };
}
