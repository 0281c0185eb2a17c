/**
 * `storePage`: one Prisma transaction writes a page's business rows, its outbox event and its
 * idempotency record, fenced by the run's lease token (R1, R3, R4, R5).
 */
import { FETCH_RECORDS, idempotencyKeyFor } from '../workflows/business-key.ts';
import type { StorePageInput, StorePageResult } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';
import { failure } from './errors.ts';
import { fingerprint } from './ids.ts';
import { insertRunEvent, PAGE_STORED_TOPIC } from './outbox.ts';

/**
 * Stores one page exactly once per idempotency key `fetch-records:<source>:<date>:page:<n>`:
 * - first call: upserts the records (unique per source + partner id), inserts one outbox event,
 *   records the key with the request fingerprint and result, and advances the run's cursor;
 * - a repeat with the same records (a retried activity, a replay): writes nothing and returns the
 *   stored result with `replayed: true`.
 * @throws ApplicationFailure LeaseLost (the token is not the run's current one: a newer owner
 *   exists), IdempotencyConflict (same key, different records).
 */
export function createStorePage(deps: ActivityDeps) {
  return async function storePage(input: StorePageInput): Promise<StorePageResult> {
    const key = idempotencyKeyFor(
      { jobType: FETCH_RECORDS, sourceId: input.sourceId, businessDate: input.businessDate },
      'page',
      input.pageNo,
    );
    const requestHash = fingerprint({
      pageNo: input.pageNo,
      records: input.records,
      nextCursor: input.nextCursor,
    });
    const now = deps.now();
    return deps.prisma.$transaction(async (tx) => {
      // Be very careful: this row lock is what serialises two attempts of the same run (a zombie
      // and its retry). Taking it first makes the idempotency check below race-free.
      const owned = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM fetch_run
         WHERE id = ${input.fetchRunId}::uuid AND lease_token = ${input.leaseToken}::uuid AND status = 'running'
           FOR UPDATE`;
      if (owned.length === 0) {
        throw failure('LeaseLost', 'LEASE_LOST', `run ${input.fetchRunId} is no longer held by this lease`);
      }
      const prior = await tx.idempotencyRecord.findUnique({ where: { key } });
      if (prior) {
        if (prior.fingerprint !== requestHash) {
          throw failure(
            'IdempotencyConflict',
            'IDEMPOTENCY_CONFLICT',
            `key ${key} was used with a different page`,
          );
        }
        return { ...(prior.result as Omit<StorePageResult, 'replayed'>), replayed: true };
      }

      const date = new Date(`${input.businessDate}T00:00:00Z`);
      const rows = input.records.map((r) => ({ external_id: r.id, data: r }));
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
          recordCount: input.records.length,
          externalIds: input.records.map((r) => r.id),
        },
        now,
      });
      const result = { eventId, recordCount: input.records.length };
      await tx.idempotencyRecord.create({
        data: {
          key,
          fingerprint: requestHash,
          result,
          createdAt: now,
          expiresAt: new Date(now.getTime() + deps.idempotencyRetentionMs),
        },
      });
      await tx.fetchRun.update({
        where: { id: input.fetchRunId },
        data: {
          pagesStored: input.pageNo + 1,
          recordsStored: { increment: input.records.length },
          cursor: input.nextCursor,
          leaseUntil: new Date(now.getTime() + deps.leaseTtlMs),
        },
      });
      return { ...result, replayed: false };
    });
  };
}
