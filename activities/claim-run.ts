/**
 * `claimRun`: insert-or-reuse the FetchRun of a business key and take its lease (R1, R2, R6).
 */
import { randomUUID } from 'node:crypto';
import { FETCH_RECORDS, idempotencyKeyFor, type BusinessKey } from '../workflows/business-key.ts';
import type { ClaimInput, ClaimResult } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';
import { failure } from './errors.ts';

interface ClaimedRow {
  id: string;
  lease_token: string;
  attempt: number;
  cursor: string | null;
  pages_stored: number;
  records_stored: number;
}

/**
 * Creates the FetchRun for the business key if missing, then claims it with a fresh lease token
 * when it is free: queued or waiting, already owned by this workflow id (a continue-as-new or a
 * retried claim), or running under a lease that expired (its owner is gone). Otherwise the caller
 * is a duplicate and gets the current owner, with no side effect.
 *
 * Idempotent per workflow id: a repeat rotates the token, and only the newest token can write.
 * Re-checks at run time that the source exists and is enabled (R2).
 * @throws ApplicationFailure NotFound (unknown source), PermissionDenied (source disabled).
 */
export function createClaimRun(deps: ActivityDeps) {
  return async function claimRun(input: ClaimInput): Promise<ClaimResult> {
    const { prisma } = deps;
    const source = await prisma.source.findUnique({ where: { id: input.sourceId } });
    if (!source) throw failure('NotFound', 'SOURCE_NOT_FOUND', `source '${input.sourceId}' does not exist`);
    if (!source.enabled)
      throw failure('PermissionDenied', 'SOURCE_DISABLED', `source '${input.sourceId}' is disabled`);

    const key: BusinessKey = {
      jobType: FETCH_RECORDS,
      sourceId: input.sourceId,
      businessDate: input.businessDate,
    };
    const date = new Date(`${input.businessDate}T00:00:00Z`);
    const now = deps.now();
    const leaseUntil = new Date(now.getTime() + deps.leaseTtlMs);
    const byKey = {
      jobType_sourceId_businessDate: { jobType: key.jobType, sourceId: key.sourceId, businessDate: date },
    };
    await prisma.fetchRun.upsert({
      where: byKey,
      create: {
        jobType: key.jobType,
        sourceId: key.sourceId,
        businessDate: date,
        payload: { sourceId: key.sourceId, businessDate: key.businessDate, requestedBy: input.requestedBy },
        idempotencyKey: idempotencyKeyFor(key),
        scheduledAt: new Date(input.scheduledAt),
        correlationId: input.correlationId,
        workflowId: input.workflowId,
        workflowRunId: input.workflowRunId,
      },
      update: {},
    });

    // Be very careful: the claim is one conditional UPDATE, never read-then-write, so that two
    // starters racing for the same key cannot both win.
    const claimed = await prisma.$queryRaw<ClaimedRow[]>`
      UPDATE fetch_run
         SET status = 'running', attempt = attempt + 1, lease_token = ${randomUUID()}::uuid,
             lease_until = ${leaseUntil}, workflow_id = ${input.workflowId},
             workflow_run_id = ${input.workflowRunId}, started_at = COALESCE(started_at, ${now}),
             updated_at = ${now}
       WHERE job_type = ${key.jobType} AND source_id = ${key.sourceId} AND business_date = ${date}
         AND (status IN ('queued', 'retry_wait')
              OR (status = 'running' AND (workflow_id = ${input.workflowId} OR lease_until < ${now})))
      RETURNING id, lease_token::text AS lease_token, attempt, cursor, pages_stored, records_stored`;
    const row = claimed[0];
    if (row) {
      deps.log.info(
        { fetchRunId: row.id, workflowId: input.workflowId, attempt: row.attempt },
        'run claimed',
      );
      return {
        outcome: 'claimed',
        fetchRunId: row.id,
        leaseToken: row.lease_token,
        attempt: row.attempt,
        cursor: row.cursor,
        pagesStored: row.pages_stored,
        recordsStored: row.records_stored,
        pageSize: source.pageSize,
      };
    }
    const current = await prisma.fetchRun.findUniqueOrThrow({
      where: byKey,
      select: { id: true, status: true, workflowId: true },
    });
    deps.log.info(
      { fetchRunId: current.id, owner: current.workflowId, status: current.status },
      'duplicate start',
    );
    return {
      outcome: 'duplicate',
      fetchRunId: current.id,
      status: current.status,
      ownerWorkflowId: current.workflowId,
    };
  };
}
