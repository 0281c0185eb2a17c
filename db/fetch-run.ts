/**
 * `fetch_run` statements (R1, R2, R6, R9): create the run of a business key, claim it, renew its
 * lease. A page's store locks and advances it in page-store.ts; how a run ends is in run-end.ts.
 * Lease times use the database's clock, so workers' clocks cannot move the takeover point.
 */
import { randomUUID } from 'node:crypto';
import { Prisma, type PrismaClient, type Source } from '../prisma/generated/client.ts';
import { type Fence, heldBy, isLive, renewedLease, tokenOf } from './fence.ts';
import { sourceColumns, sourceOfRow } from './sources.ts';

/** The business key of a run, with its date as the `date` column takes it (`dateColumn`). */
export interface RunKey {
  jobType: string;
  sourceId: string;
  date: Date;
}

/** The row a claim returns, and what a starter that did not claim is told. */
export interface RunRow {
  id: string;
  status: string;
  lease_token: string | null;
  attempt: number;
  cursor: string | null;
  pages_stored: number;
  records_stored: number;
  workflow_id: string;
}

/** The columns of {@link RunRow}, as one SQL fragment for RETURNING and SELECT alike. */
const RUN_COLUMNS = Prisma.raw(
  'id, status::text AS status, lease_token::text AS lease_token, attempt, cursor, pages_stored, records_stored, workflow_id',
);

/** The workflow execution that starts or claims a run. */
export interface Claimant {
  workflowId: string;
  workflowRunId: string;
}

// Be very careful: insert and claim are single statements (unique constraint, then one
// conditional UPDATE under the row lock), never read-then-write, so racing starters cannot
// both win and a slow retry cannot hand out a second token to the same execution.

/**
 * Inserts the run of `key` (status `queued`) unless it exists. Idempotent: either unique key
 * (business key or idempotency key) means it exists, and then nothing is written.
 */
export async function insertRunIfMissing(
  db: Pick<PrismaClient, '$executeRaw'>,
  key: RunKey,
  run: Claimant & { payload: string; idempotencyKey: string; scheduledAt: Date; correlationId: string },
): Promise<void> {
  await db.$executeRaw`
    INSERT INTO fetch_run (id, job_type, source_id, business_date, payload, idempotency_key, scheduled_at,
                           correlation_id, workflow_id, workflow_run_id, updated_at)
    VALUES (${randomUUID()}::uuid, ${key.jobType}, ${key.sourceId}, ${key.date}::date, ${run.payload}::jsonb,
            ${run.idempotencyKey}, ${run.scheduledAt}, ${run.correlationId},
            ${run.workflowId}, ${run.workflowRunId}, now())
    ON CONFLICT DO NOTHING`; // either unique key (business key or idempotency key) means it exists
}

/**
 * Claims the run of `key` for `by` when it is free — queued, already owned by this workflow id,
 * live (running or waiting for a step's retry) under a lease that expired, or ended and started
 * again by a new execution of its workflow id — and leases it for `ttlSeconds`. A repeat by the same execution keeps its
 * token and attempt; any other claim gets a fresh token. Returns the claimed row, or undefined
 * when the run is not free.
 */
export async function claimRun(
  db: Pick<PrismaClient, '$queryRaw'>,
  key: RunKey,
  by: Claimant,
  ttlSeconds: number,
): Promise<RunRow | undefined> {
  const claimed = await db.$queryRaw<RunRow[]>`
    UPDATE fetch_run
       SET status = 'running',
           attempt = CASE WHEN ${isLive()} AND workflow_id = ${by.workflowId} AND workflow_run_id = ${by.workflowRunId}
                          THEN attempt ELSE attempt + 1 END,
           lease_token = CASE WHEN ${isLive()} AND workflow_id = ${by.workflowId} AND workflow_run_id = ${by.workflowRunId}
                              THEN lease_token ELSE ${randomUUID()}::uuid END,
           next_run_at = NULL,
           lease_until = now() + make_interval(secs => ${ttlSeconds}),
           workflow_id = ${by.workflowId}, workflow_run_id = ${by.workflowRunId},
           started_at = COALESCE(started_at, now()), updated_at = now(),
           finished_at = CASE WHEN status IN ('cancelled', 'dead_lettered', 'compensated') THEN NULL ELSE finished_at END
     WHERE job_type = ${key.jobType} AND source_id = ${key.sourceId} AND business_date = ${key.date}::date
       AND (status = 'queued'
            -- A live run (running, or retry_wait between a step's attempts) is owned like running.
            OR (${isLive()} AND (workflow_id = ${by.workflowId} OR lease_until < now()))
            -- A new execution of the business-key workflow (Temporal allows one after a failed,
            -- cancelled or terminated run) takes the key up again and resumes from its pages.
            OR (status IN ('cancelled', 'dead_lettered', 'compensated') AND workflow_id = ${by.workflowId}
                AND workflow_run_id IS DISTINCT FROM ${by.workflowRunId}))
    RETURNING ${RUN_COLUMNS}`;
  return claimed[0];
}

/** The run of `key` as it is now, or undefined. Read-only. */
export async function findRunByKey(
  db: Pick<PrismaClient, '$queryRaw'>,
  key: RunKey,
): Promise<RunRow | undefined> {
  const [current] = await db.$queryRaw<RunRow[]>`
    SELECT ${RUN_COLUMNS} FROM fetch_run
     WHERE job_type = ${key.jobType} AND source_id = ${key.sourceId} AND business_date = ${key.date}::date`;
  return current;
}

/**
 * Extends the lease by `ttlMs` from now if `fence` still holds it, and records `workflowRunId`
 * (when given) as the execution that holds the run now. Returns whether the lease was renewed.
 */
export async function renewLease(
  db: Pick<PrismaClient, '$executeRaw'>,
  fence: Fence,
  ttlMs: number,
  workflowRunId: string | undefined,
): Promise<boolean> {
  const renewed = await db.$executeRaw`
    UPDATE fetch_run SET ${renewedLease(ttlMs, workflowRunId)} WHERE ${heldBy(fence)}`;
  return renewed === 1;
}

/**
 * {@link renewLease}, reading the source `sourceId` as it is now in the same statement (R2: a run
 * re-reads its source at every step): `{ source }`, null when it was deleted; undefined when the
 * fence does not hold the run (nothing was renewed).
 */
export async function renewLeaseReadingSource(
  db: Pick<PrismaClient, '$queryRaw'>,
  fence: Fence,
  ttlMs: number,
  workflowRunId: string | undefined,
  sourceId: string,
): Promise<{ source: Source | null } | undefined> {
  const [row] = await db.$queryRaw<Record<string, unknown>[]>`
    WITH run AS (UPDATE fetch_run SET ${renewedLease(ttlMs, workflowRunId)} WHERE ${heldBy(fence)} RETURNING id)
    SELECT run.id AS run_id, ${sourceColumns('s')} FROM run LEFT JOIN source s ON s.id = ${sourceId}`;
  return row ? { source: sourceOfRow(row) } : undefined;
}

/**
 * The status of the run while it carries `fence`'s token, whatever the status; undefined when
 * another claim's token is on it. Read-only: tells a run that ended under this claim from one
 * another claim holds.
 */
export async function statusUnderToken(
  db: Pick<PrismaClient, '$queryRaw'>,
  fence: Fence,
): Promise<string | undefined> {
  const [row] = await db.$queryRaw<{ status: string }[]>`
    SELECT status::text AS status FROM fetch_run WHERE ${tokenOf(fence)}`;
  return row?.status;
}
