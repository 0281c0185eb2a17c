/**
 * `storePage`: one Prisma transaction moves a staged page into the business rows, writes its
 * outbox event and its idempotency record, fenced by the run's lease token (R1, R3, R4, R5).
 */
import { advanceRun, lockHeldRun } from '../db/fetch-run.ts';
import { findIdempotencyRecord, insertIdempotencyRecord } from '../db/idempotency.ts';
import { sourcePaused } from '../db/sources.ts';
import { dropStagedPage, loadStagedPage } from '../db/staging.ts';
import { jobTypeOf, pageKeyFor } from '../workflows/business-key.ts';
import type { StorePageInput, StorePageResult } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';
import { failure } from './errors.ts';
import { crashPoint } from './crash-points.ts';
import { fingerprint } from './ids.ts';
import { notHeld, renewLease } from './lease.ts';
import { byRecordId, inJob, jobOf } from './job-runtime.ts';
import { insertJobEvents } from './outbox.ts';
import { loadSource } from './sources.ts';

/** What a page's idempotency record keeps as its result (plus the page's next cursor). */
type StoredResult = Omit<StorePageResult, 'replayed' | 'sourcePaused'>;

/** Bounded inside the database preset's 10 s start-to-close timeout. */
const TRANSACTION_OPTIONS = { maxWait: 2_000, timeout: 8_000 };

/**
 * Stores one page exactly once per idempotency key `fetch-records:<source>:<date>:page:<n>`:
 * - first call: upserts the staged records (unique per source + partner id), inserts one outbox
 *   event, records the key with the request fingerprint and result, advances the run's cursor and
 *   deletes the staged page — all or nothing;
 * - a repeat (a retried activity, a replay): writes nothing and returns the stored result with
 *   `replayed: true`.
 * @throws ApplicationFailure LeaseLost (the token is not the run's current one: a newer owner
 *   exists), IdempotencyConflict (same key, different records), NotFound (nothing staged for the
 *   key, e.g. expired), InvalidInput (the staged page is not what fetchPage reported).
 */
export function createStorePage(deps: ActivityDeps) {
  return async function storePage(input: StorePageInput): Promise<StorePageResult> {
    const key = pageKeyFor({ ...input, jobType: jobTypeOf(input) }, input.pageNo);
    const now = deps.now();
    const source = await loadSource(deps.prisma, input.sourceId);
    const { job, view } = jobOf(deps, source);
    const what = `job ${job.type} storePage`;
    const stored = await deps.prisma.$transaction(async (tx) => {
      // Be very careful: the run's row lock comes first (lockHeldRun); it serialises two attempts
      // of the same run and makes the idempotency check below race-free.
      if (!(await lockHeldRun(tx, input))) throw await notHeld(tx, input);
      const staged = await loadStagedPage(tx, key);
      const prior = await findIdempotencyRecord(tx, key);
      if (prior) {
        // A staged page under a stored key is a re-fetch: it must match what was stored.
        if (staged && prior.fingerprint !== fingerprint(staged.records)) {
          throw failure(
            'IdempotencyConflict',
            'IDEMPOTENCY_CONFLICT',
            `key ${key} was used with a different page`,
          );
        }
        if (staged) await dropStagedPage(tx, key);
        // The record's next cursor is for fetchPage (db/stored-page.ts), not part of the result.
        const { nextCursor: _, ...result } = prior.result as StoredResult & { nextCursor?: unknown };
        return {
          ...result,
          replayed: true,
          sourcePaused: await sourcePaused(tx, input.sourceId),
        };
      }
      if (!staged) throw failure('NotFound', 'STAGED_PAGE_MISSING', `no staged page for ${key}`);
      if (staged.recordCount !== input.recordCount || staged.cursor !== input.nextCursor) {
        throw failure(
          'InvalidInput',
          'STAGED_PAGE_MISMATCH',
          `staged page ${key} changed after it was fetched`,
        );
      }

      const records = byRecordId(job, staged.records, what);
      const ctx = {
        source: view,
        businessDate: input.businessDate,
        fetchRunId: input.fetchRunId,
        pageNo: input.pageNo,
        now,
      };
      const page = await inJob(job, 'storePage', () => job.storePage(tx, records, ctx));
      const recordCount = checkedStoreResult(page, records.length, what);
      const eventIds = await insertJobEvents(tx, {
        stepKey: key,
        fetchRunId: input.fetchRunId,
        events: page.events,
        now,
      });
      // `eventId` is the page's first event (the one event of pages stored before jobs had many).
      const result = { eventId: eventIds[0] ?? null, eventIds, recordCount };
      await insertIdempotencyRecord(tx, {
        key,
        fingerprint: fingerprint(staged.records),
        // With the partner's next cursor: a reset execution asking for this page again gets it back.
        result: { ...result, nextCursor: input.nextCursor },
        createdAt: now,
        expiresAt: new Date(now.getTime() + deps.idempotencyRetentionMs),
      });
      await advanceRun(tx, input.fetchRunId, {
        pagesStored: input.pageNo + 1,
        recordCount,
        cursor: input.nextCursor,
      });
      await renewLease(tx, input, deps.leaseTtlMs);
      await dropStagedPage(tx, key);
      crashPoint(deps.crashPoint, 'before-commit');
      return { ...result, replayed: false, sourcePaused: await sourcePaused(tx, input.sourceId) };
    }, TRANSACTION_OPTIONS);
    if (!stored.replayed) crashPoint(deps.crashPoint, 'after-commit');
    return stored;
  };
}

/**
 * The record count a job's storePage reports, checked with its events.
 * @throws ApplicationFailure InvalidResponse `STORE_RESULT_SHAPE` when the result is not
 *   `{events: [{topic, payload}], recordCount?}`.
 */
function checkedStoreResult(page: unknown, given: number, what: string): number {
  const p = page as { events?: unknown; recordCount?: unknown } | null;
  const eventsOk =
    Array.isArray(p?.events) &&
    p.events.every(
      (e: { topic?: unknown; payload?: unknown } | null) =>
        typeof e?.topic === 'string' && e.topic !== '' && typeof e.payload === 'object' && e.payload !== null,
    );
  const count = p?.recordCount ?? given;
  if (!eventsOk || typeof count !== 'number' || !Number.isInteger(count) || count < 0) {
    throw failure(
      'InvalidResponse',
      'STORE_RESULT_SHAPE',
      `${what}: returned something other than {events, recordCount?}`,
    );
  }
  return count;
}
