/**
 * `storePage`: one Prisma transaction moves a staged page into the business rows, writes its
 * outbox event and its idempotency record, fenced by the run's lease token (R1, R3, R4, R5).
 */
import { commitPage, lockRunWithSource, type PageCommit, takeStagedPage } from '../../db/pages/page-store.ts';
import { inTransaction } from '../../db/transaction.ts';
import { inDbTransactionSpan } from '../../runtime/trace-spans.ts';
import { jobTypeOf, pageKeyFor } from '../../contract/business-key.ts';
import type { StorePageInput, StorePageResult } from '../../contract/types.ts';
import type { ActivityDeps } from '../deps.ts';
import { failure } from '../errors.ts';
import { crashPoint } from '../../runtime/crash-points.ts';
import { fingerprint } from '../ids.ts';
import { currentRunId, lostLease } from '../run/lease.ts';
import type { StoreResult } from '../job-api/index.ts';
import type { PageWatermark } from '../../db/pages/watermark.ts';
import { pageWatermarkOf } from './window.ts';
import { byRecordId, inJob, jobOf } from '../job-runtime.ts';
import { jobEventRows } from '../outbox.ts';
import { sourceNotFound } from '../sources.ts';

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
    // The engine's statements go on `sql`, the transaction's own connection (db/transaction.ts);
    // the job's go on Prisma's `tx`.
    const stored = await inDbTransactionSpan('store page', () =>
      inTransaction(
        deps.prisma,
        async (tx, sql) => {
          // Be very careful: the run's row lock comes first; it serialises two attempts of the same
          // run and makes the idempotency check of the next statement race-free.
          const locked = await lockRunWithSource(sql, input, input.sourceId);
          if (!locked) throw sourceNotFound(input.sourceId);
          // Run again after the run ended under this claim (a reset, or a workflow task re-run after its
          // worker died: the steps of one task are local activities): RUN_ENDED, not LEASE_LOST.
          if (!locked.held) throw await lostLease(tx, input);
          const { job, view } = jobOf(deps, locked.source);
          const what = `job ${job.type} storePage`;
          // The staged page is deleted as it is read: a page refused below comes back on rollback.
          const { staged, prior, paused } = await takeStagedPage(sql, key, input.sourceId);
          if (prior) {
            // A staged page under a stored key is a re-fetch: it must match what was stored.
            if (staged && prior.fingerprint !== fingerprint(staged.records)) {
              throw failure(
                'IdempotencyConflict',
                'IDEMPOTENCY_CONFLICT',
                `key ${key} was used with a different page`,
              );
            }
            // The record's next cursor is for fetchPage (db/pages/stored-page.ts), not part of the result.
            const { nextCursor: _, ...result } = prior.result as StoredResult & { nextCursor?: unknown };
            return { ...result, replayed: true, sourcePaused: paused };
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
            sql,
            businessDate: input.businessDate,
            fetchRunId: input.fetchRunId,
            pageNo: input.pageNo,
            now,
          };
          const page = await inJob(job, 'storePage', () => job.storePage(tx, records, ctx));
          const recordCount = checkedStoreResult(page, records.length, what);
          const spec = job.watermark?.(view.config);
          const watermark =
            spec === undefined
              ? undefined
              : pageWatermarkOf(
                  spec,
                  records.map((r) => r.record),
                  (_, i) => records[i]?.id ?? '?',
                  input.nextCursor === null,
                  what,
                );
          const { result, commit } = pageCommitOf(input, {
            key,
            stagedRecords: staged.records,
            events: page.events,
            recordCount,
            now,
            retentionMs: deps.idempotencyRetentionMs,
            leaseTtlMs: deps.leaseTtlMs,
            workflowRunId: currentRunId(),
            ...(watermark === undefined ? {} : { watermark }),
          });
          const committed = await commitPage(sql, commit);
          if (!committed.advanced) throw await lostLease(tx, input);
          crashPoint(deps.crashPoint, 'before-commit');
          return { ...result, replayed: false, sourcePaused: committed.paused };
        },
        TRANSACTION_OPTIONS,
      ),
    );
    if (!stored.replayed) crashPoint(deps.crashPoint, 'after-commit');
    return stored;
  };
}

/**
 * What storing a page writes beside the job's rows (db/pages/page-store.ts `commitPage`): its outbox
 * events, with ids derived from the page key, its idempotency record and the run's advance; and
 * the step's result. The one place both are built (the activity, and the bench's plain-`pg`
 * baseline of it).
 */
export function pageCommitOf(
  input: StorePageInput,
  page: {
    key: string;
    stagedRecords: unknown[];
    events: StoreResult['events'];
    recordCount: number;
    now: Date;
    retentionMs: number;
    leaseTtlMs: number;
    workflowRunId: string | undefined;
    watermark?: PageWatermark;
  },
): { result: StoredResult; commit: PageCommit } {
  const { key, now } = page;
  const events = jobEventRows({ stepKey: key, fetchRunId: input.fetchRunId, events: page.events, now });
  const eventIds = events.map((e) => e.id);
  // `eventId` is the page's first event (the one event of pages stored before jobs had many).
  const result = { eventId: eventIds[0] ?? null, eventIds, recordCount: page.recordCount };
  const commit = {
    fence: input,
    sourceId: input.sourceId,
    events,
    record: {
      key,
      fingerprint: fingerprint(page.stagedRecords),
      // With the partner's next cursor: a reset execution asking for this page again gets it back.
      result: { ...result, nextCursor: input.nextCursor },
      createdAt: now,
      expiresAt: new Date(now.getTime() + page.retentionMs),
    },
    run: { pagesStored: input.pageNo + 1, recordCount: page.recordCount, cursor: input.nextCursor },
    leaseTtlMs: page.leaseTtlMs,
    workflowRunId: page.workflowRunId,
    ...(page.watermark === undefined ? {} : { watermark: page.watermark }),
  };
  return { result, commit };
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
