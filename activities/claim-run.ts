/**
 * `claimRun`: insert-or-reuse the FetchRun of a business key and take its lease (R1, R2, R6).
 */
import { observeRunStarted } from '../worker/metrics.ts';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Prisma } from '../prisma/generated/client.ts';
import {
  dateColumn,
  idempotencyKeyFor,
  isBusinessDate,
  isCorrelationId,
  isJobType,
  isSourceId,
  parseWorkflowId,
} from '../workflows/business-key.ts';
import { type ClaimInput, type ClaimResult, REQUESTED_BY } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';
import { isPartnerPreset } from '../workflows/retry-presets.ts';
import { failure } from './errors.ts';
import { loadEnabledSource } from './sources.ts';

/** The columns of {@link RunRow}, as one SQL fragment for RETURNING and SELECT alike. */
const RUN_COLUMNS = Prisma.raw(
  'id, status::text AS status, lease_token::text AS lease_token, attempt, cursor, pages_stored, records_stored, workflow_id',
);

/**
 * The workflow's input, checked again where it first touches the database (R2): ids, a date and
 * short identifiers only. The client checks the same before starting; this covers any other starter.
 */
const claimInputSchema = z.object({
  jobType: z.string().refine(isJobType).optional(),
  sourceId: z.string().refine(isSourceId),
  businessDate: z.string().refine(isBusinessDate),
  workflowId: z.string().min(1).max(400),
  workflowRunId: z.string().min(1).max(100),
  correlationId: z.string().refine(isCorrelationId),
  requestedBy: z.enum(REQUESTED_BY),
  scheduledAt: z.iso.datetime({ offset: true }),
});

interface RunRow {
  id: string;
  status: string;
  lease_token: string | null;
  attempt: number;
  cursor: string | null;
  pages_stored: number;
  records_stored: number;
  workflow_id: string;
}

/**
 * Creates the FetchRun for the business key if missing, then claims it when it is free: queued or
 * waiting, already owned by this workflow id, or running under a lease that expired (its owner is
 * gone). When this workflow id's run already succeeded, its outcome is reported; any other caller
 * is a duplicate and gets the current owner. Neither of those has a side effect.
 *
 * Idempotent per workflow execution: a repeat by the same run id (a retried activity) keeps the
 * token it was given; another execution of the same workflow id (a restart after a failure, a
 * reset) gets a fresh one, and only the newest token can write. Lease times use the database's
 * clock, so workers' clocks cannot move the takeover point. Re-checks the source (R2).
 * @throws ApplicationFailure NotFound (unknown source), PermissionDenied (source disabled).
 */
export function createClaimRun(deps: ActivityDeps) {
  return async function claimRun(input: ClaimInput): Promise<ClaimResult> {
    const { prisma } = deps;
    const valid = claimInputSchema.safeParse(input);
    if (!valid.success) {
      const fields = [...new Set(valid.error.issues.map((i) => i.path.join('.')))].join(', ');
      throw failure('InvalidInput', 'INVALID_WORKFLOW_INPUT', `invalid workflow input: ${fields}`);
    }
    const source = await loadEnabledSource(prisma, input.sourceId);
    if (!isPartnerPreset(source.retryPolicy)) {
      throw failure(
        'InvalidInput',
        'UNKNOWN_RETRY_POLICY',
        `source '${source.id}' names unknown retry policy '${source.retryPolicy}'`,
      );
    }
    const retryPolicy = source.retryPolicy;
    // The source's job runs the run; a starter that names another (or a workflow id of another)
    // was started for a different job than the source has.
    const named = input.jobType ?? parseWorkflowId(input.workflowId)?.jobType ?? source.jobType;
    if (named !== source.jobType) {
      throw failure(
        'InvalidInput',
        'JOB_TYPE_MISMATCH',
        `source '${source.id}' runs job '${source.jobType}', not '${named}'`,
      );
    }
    const job = deps.jobs.get(source.jobType);
    const key = { jobType: source.jobType, sourceId: input.sourceId, businessDate: input.businessDate };
    const date = dateColumn(input.businessDate);
    const payload = JSON.stringify({
      sourceId: key.sourceId,
      businessDate: key.businessDate,
      requestedBy: input.requestedBy,
    });
    const ttlSeconds = deps.leaseTtlMs / 1000;

    // Be very careful: insert and claim are single statements (unique constraint, then one
    // conditional UPDATE under the row lock), never read-then-write, so racing starters cannot
    // both win and a slow retry cannot hand out a second token to the same execution.
    await prisma.$executeRaw`
      INSERT INTO fetch_run (id, job_type, source_id, business_date, payload, idempotency_key, scheduled_at,
                             correlation_id, workflow_id, workflow_run_id, updated_at)
      VALUES (${randomUUID()}::uuid, ${key.jobType}, ${key.sourceId}, ${date}::date, ${payload}::jsonb,
              ${idempotencyKeyFor(key)}, ${new Date(input.scheduledAt)}, ${input.correlationId},
              ${input.workflowId}, ${input.workflowRunId}, now())
      ON CONFLICT DO NOTHING`; // either unique key (business key or idempotency key) means it exists
    const claimed = await prisma.$queryRaw<RunRow[]>`
      UPDATE fetch_run
         SET status = 'running',
             attempt = CASE WHEN status = 'running' AND workflow_id = ${input.workflowId} AND workflow_run_id = ${input.workflowRunId}
                            THEN attempt ELSE attempt + 1 END,
             lease_token = CASE WHEN status = 'running' AND workflow_id = ${input.workflowId} AND workflow_run_id = ${input.workflowRunId}
                                THEN lease_token ELSE ${randomUUID()}::uuid END,
             lease_until = now() + make_interval(secs => ${ttlSeconds}),
             workflow_id = ${input.workflowId}, workflow_run_id = ${input.workflowRunId},
             started_at = COALESCE(started_at, now()), updated_at = now(),
             finished_at = CASE WHEN status IN ('cancelled', 'dead_lettered', 'compensated') THEN NULL ELSE finished_at END
       WHERE job_type = ${key.jobType} AND source_id = ${key.sourceId} AND business_date = ${date}::date
         AND (status IN ('queued', 'retry_wait')
              OR (status = 'running' AND (workflow_id = ${input.workflowId} OR lease_until < now()))
              -- A new execution of the business-key workflow (Temporal allows one after a failed,
              -- cancelled or terminated run) takes the key up again and resumes from its pages.
              OR (status IN ('cancelled', 'dead_lettered', 'compensated') AND workflow_id = ${input.workflowId}
                  AND workflow_run_id IS DISTINCT FROM ${input.workflowRunId}))
      RETURNING ${RUN_COLUMNS}`;
    const row = claimed[0];
    if (row?.lease_token) {
      observeRunStarted(deps.metrics, input.sourceId, key.jobType);
      deps.log.info(
        { fetchRunId: row.id, workflowId: input.workflowId, attempt: row.attempt },
        'run claimed',
      );
      return {
        outcome: 'claimed',
        jobType: key.jobType,
        fetchRunId: row.id,
        leaseToken: row.lease_token,
        attempt: row.attempt,
        cursor: row.cursor,
        pagesStored: row.pages_stored,
        recordsStored: row.records_stored,
        pageSize: source.pageSize,
        retryPolicy,
        // A job without a downstream action has nothing to submit, whatever the source says.
        submitSummary: source.submitSummary && job.downstream !== undefined,
        ...(job.downstream ? { downstreamAction: job.downstream.name } : {}),
        sourcePaused: source.pausedAt !== null,
      };
    }
    const [current] = await prisma.$queryRaw<RunRow[]>`
      SELECT ${RUN_COLUMNS} FROM fetch_run
       WHERE job_type = ${key.jobType} AND source_id = ${key.sourceId} AND business_date = ${date}::date`;
    if (!current) throw new Error(`fetch_run of ${idempotencyKeyFor(key)} vanished`);
    // The same workflow id restarted after its run committed (e.g. terminated just after
    // completeRun): report the stored outcome. Any other starter is a visible duplicate.
    if (current.status === 'succeeded' && current.workflow_id === input.workflowId) {
      return {
        outcome: 'succeeded',
        fetchRunId: current.id,
        pages: current.pages_stored,
        records: current.records_stored,
      };
    }
    deps.log.info(
      { fetchRunId: current.id, owner: current.workflow_id, status: current.status },
      'duplicate start',
    );
    return {
      outcome: 'duplicate',
      fetchRunId: current.id,
      status: current.status,
      ownerWorkflowId: current.workflow_id,
    };
  };
}
