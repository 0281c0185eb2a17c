/**
 * `claimRun`: insert-or-reuse the FetchRun of a business key and take its lease (R1, R2, R6).
 */
import { observeRunStarted } from '../../runtime/metrics/metrics.ts';
import { z } from 'zod';
import { downstreamTaskQueue } from '../../db/ledger/downstreams.ts';
import { claimRun as claimRunRow, findRunByKey, insertRunIfMissing } from '../../db/fetch-run.ts';
import { engineSql } from '../../db/transaction.ts';
import {
  dateColumn,
  idempotencyKeyFor,
  isBusinessDate,
  isCorrelationId,
  isJobType,
  isSourceId,
  parseWorkflowId,
} from '../../contract/business-key.ts';
import { INVALID_WORKFLOW_INPUT, isIsoInstant } from '../../contract/input-limits.ts';
import { type ClaimInput, type ClaimResult, REQUESTED_BY } from '../../contract/types.ts';
import type { ActivityDeps } from '../deps.ts';
import { isPartnerPreset } from '../../contract/retry-presets.ts';
import { failure } from '../errors.ts';
import { loadEnabledSource } from '../sources.ts';

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
  scheduledAt: z.string().refine(isIsoInstant),
});

/**
 * Creates the FetchRun for the business key if missing, then claims it when it is free: queued,
 * already owned by this workflow id, or live (running, or waiting for a step's retry) under a
 * lease that expired (its owner is gone). When this workflow id's run already succeeded, its outcome is reported; any other caller
 * is a duplicate and gets the current owner. Neither of those has a side effect.
 *
 * Idempotent per workflow execution: a repeat by the same run id (a retried activity) keeps the
 * token it was given; another execution of the same workflow id (a restart after a failure, a
 * reset) gets a fresh one, and only the newest token can write. Lease times use the database's
 * clock, so workers' clocks cannot move the takeover point. Re-checks the source (R2). A claim
 * also says where the run's page fetches go: its downstream's task queue when the downstream is
 * isolated, with the source's fairness weight there (R8).
 * @throws ApplicationFailure NotFound (unknown source), PermissionDenied (source disabled).
 */
export function createClaimRun(deps: ActivityDeps) {
  return async function claimRun(input: ClaimInput): Promise<ClaimResult> {
    const { prisma } = deps;
    // The engine's own statements skip the Prisma client (db/transaction.ts).
    const db = engineSql(prisma);
    const valid = claimInputSchema.safeParse(input);
    if (!valid.success) {
      const fields = [...new Set(valid.error.issues.map((i) => i.path.join('.')))].join(', ');
      throw failure('InvalidInput', INVALID_WORKFLOW_INPUT, `invalid workflow input: ${fields}`);
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
    // Where the run's page fetches go, and its fair share there (R8), fixed for the run.
    const downstream = await deps.downstreams(source.downstream);
    const weight = downstream.sourceWeights[source.id] ?? 1;
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
    // A job this worker does not run is not refused here: the run is claimed, so that its first
    // step needing the job fails it (UNKNOWN_JOB_TYPE) and it ends as a dead letter operators see.
    // Refusing the claim would fail the workflow with no run row and no dead letter at all.
    const job = deps.jobs.find(source.jobType);
    const key = { jobType: source.jobType, sourceId: input.sourceId, businessDate: input.businessDate };
    const date = dateColumn(input.businessDate);
    const payload = JSON.stringify({
      sourceId: key.sourceId,
      businessDate: key.businessDate,
      requestedBy: input.requestedBy,
    });
    const ttlSeconds = deps.leaseTtlMs / 1000;

    // Be very careful: insert and claim are single statements (db/fetch-run.ts), never
    // read-then-write, so racing starters cannot both win.
    const runKey = { ...key, date };
    await insertRunIfMissing(db, runKey, {
      payload,
      idempotencyKey: idempotencyKeyFor(key),
      scheduledAt: new Date(input.scheduledAt),
      correlationId: input.correlationId,
      workflowId: input.workflowId,
      workflowRunId: input.workflowRunId,
    });
    const row = await claimRunRow(db, runKey, input, ttlSeconds);
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
        submitSummary: source.submitSummary && job?.downstream !== undefined,
        ...(job?.downstream ? { downstreamAction: job.downstream.name } : {}),
        sourcePaused: source.pausedAt !== null,
        maxRunTimeMs: source.maxRunTimeMs,
        ...(downstream.isolated ? { partnerQueue: downstreamTaskQueue(deps.taskQueue, downstream.id) } : {}),
        // Only when it is not the default: a resume state without new fields stays readable by
        // the build before this one (a rollback), as long as the downstream is not isolated.
        ...(weight === 1 ? {} : { partnerWeight: weight }),
        // An isolated downstream's own task queue is the point of isolating it: its fetches stay
        // activity tasks there, whatever the source asks.
        ...(source.localFetch && !downstream.isolated ? { localFetch: true } : {}),
      };
    }
    const current = await findRunByKey(db, runKey);
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
