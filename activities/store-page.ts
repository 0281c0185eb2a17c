/**
 * `storePage`: one Prisma transaction moves a staged page into the business rows, writes its
 * outbox event and its idempotency record, fenced by the run's lease token (R1, R3, R4, R5).
 */
import type { PrismaClient } from '../prisma/generated/client.ts';
import { dateColumn, pageKeyFor } from '../workflows/business-key.ts';
import type { StorePageInput, StorePageResult } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';
import { failure } from './errors.ts';
import { crashPoint } from './crash-points.ts';
import { fingerprint } from './ids.ts';
import { leaseLost, renewLease } from './lease.ts';
import { insertRunEvent, PAGE_STORED_TOPIC } from './outbox.ts';
import { dropStagedPage, loadStagedPage } from './staging.ts';

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
    const key = pageKeyFor(input.sourceId, input.businessDate, input.pageNo);
    const now = deps.now();
    const stored = await deps.prisma.$transaction(async (tx) => {
      // Be very careful: this row lock is what serialises two attempts of the same run (a zombie
      // and its retry). Taking it first makes the idempotency check below race-free.
      const owned = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM fetch_run
         WHERE id = ${input.fetchRunId}::uuid AND lease_token = ${input.leaseToken}::uuid AND status = 'running'
           FOR UPDATE`;
      if (owned.length === 0) throw leaseLost(input);
      const staged = await loadStagedPage(tx, key);
      const prior = await tx.idempotencyRecord.findUnique({ where: { key } });
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
        return {
          ...(prior.result as Omit<StorePageResult, 'replayed' | 'sourcePaused'>),
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

      const date = dateColumn(input.businessDate);
      // A partner may repeat an id within a page (offset paging): the last occurrence wins, as
      // one statement may not upsert the same row twice.
      const byId = new Map(staged.records.map((r) => [r.id, r]));
      const rows = [...byId.values()].map((r) => ({ external_id: r.id, data: r }));
      if (rows.length > 0) {
        await tx.$executeRaw`
          INSERT INTO fetched_record (source_id, external_id, business_date, fetch_run_id, data, created_at, updated_at)
          SELECT ${input.sourceId}, r.external_id, ${date}::date, ${input.fetchRunId}::uuid, r.data, ${now}, ${now}
            FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(external_id text, data jsonb)
          ON CONFLICT (source_id, external_id) DO UPDATE
             SET data = EXCLUDED.data, business_date = EXCLUDED.business_date,
                 fetch_run_id = EXCLUDED.fetch_run_id, updated_at = EXCLUDED.updated_at`;
      }
      const eventId = await insertRunEvent(tx, {
        topic: PAGE_STORED_TOPIC,
        stepKey: key,
        fetchRunId: input.fetchRunId,
        payload: {
          fetchRunId: input.fetchRunId,
          sourceId: input.sourceId,
          businessDate: input.businessDate,
          pageNo: input.pageNo,
          recordCount: rows.length,
          externalIds: rows.map((r) => r.external_id),
        },
        now,
      });
      const result = { eventId, recordCount: rows.length };
      await tx.idempotencyRecord.create({
        data: {
          key,
          fingerprint: fingerprint(staged.records),
          result,
          createdAt: now,
          expiresAt: new Date(now.getTime() + deps.idempotencyRetentionMs),
        },
      });
      await tx.fetchRun.update({
        where: { id: input.fetchRunId },
        data: {
          pagesStored: input.pageNo + 1,
          recordsStored: { increment: rows.length },
          cursor: input.nextCursor,
        },
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

/** Whether an operator paused the source (read inside the page's transaction). */
async function sourcePaused(tx: Pick<PrismaClient, '$queryRaw'>, sourceId: string): Promise<boolean> {
  const rows = await tx.$queryRaw<{ paused: boolean }[]>`
    SELECT paused_at IS NOT NULL AS paused FROM source WHERE id = ${sourceId}`;
  return rows[0]?.paused ?? false;
}
