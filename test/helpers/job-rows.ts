/**
 * Rows of a given job type, written directly: tests of the `--job` filters need runs and dead
 * letters of two jobs side by side without running a partner for each job.
 */
import { randomUUID } from 'node:crypto';
import type { DeadLetter, FetchRun, Prisma, PrismaClient, RunStatus } from '../../prisma/generated/client.ts';

export interface RunRowOptions {
  jobType: string;
  sourceId: string;
  /** `YYYY-MM-DD`. */
  date: string;
  status?: RunStatus;
  /** When set, the run ended then (a window-based count sees it). */
  finishedAt?: Date;
}

/** A FetchRun row of `jobType` under its own business key and workflow id. */
export async function insertRun(prisma: PrismaClient, o: RunRowOptions): Promise<FetchRun> {
  return prisma.fetchRun.create({
    data: {
      jobType: o.jobType,
      sourceId: o.sourceId,
      businessDate: new Date(`${o.date}T00:00:00Z`),
      payload: { sourceId: o.sourceId, businessDate: o.date, requestedBy: 'test' },
      idempotencyKey: `${o.jobType}:${o.sourceId}:${o.date}`,
      status: o.status ?? 'dead_lettered',
      attempt: 1,
      scheduledAt: new Date(`${o.date}T02:00:00Z`),
      correlationId: `corr-${o.jobType}-${o.sourceId}-${o.date}`,
      workflowId: `fetch/${o.jobType}/${o.sourceId}/${o.date}`,
      ...(o.finishedAt === undefined ? {} : { startedAt: o.finishedAt, finishedAt: o.finishedAt }),
    },
  });
}

/**
 * A running FetchRun row of `jobType` held under a fresh lease token, as a claim leaves it (started
 * now; `data` sets more), and the fence that holds it.
 */
export async function insertHeldRun(
  prisma: PrismaClient,
  o: Omit<RunRowOptions, 'status'>,
  data: Prisma.FetchRunUpdateInput = {},
): Promise<{ run: FetchRun; fence: { fetchRunId: string; leaseToken: string } }> {
  const created = await insertRun(prisma, { ...o, status: 'running' });
  const leaseToken = randomUUID();
  const run = await prisma.fetchRun.update({
    where: { id: created.id },
    data: { leaseToken, startedAt: new Date(), ...data },
  });
  return { run, fence: { fetchRunId: run.id, leaseToken } };
}

/** A dead-lettered run of `jobType` and its open dead letter (no Temporal run id: no timeline). */
export async function insertDeadLetter(
  prisma: PrismaClient,
  o: Omit<RunRowOptions, 'status'>,
): Promise<{ run: FetchRun; letter: DeadLetter }> {
  const run = await insertRun(prisma, { ...o, status: 'dead_lettered' });
  const at = o.finishedAt ?? new Date();
  const letter = await prisma.deadLetter.create({
    data: {
      fetchRunId: run.id,
      jobType: o.jobType,
      sourceId: o.sourceId,
      businessDate: run.businessDate,
      workflowId: run.workflowId,
      errorType: 'InvalidInput',
      errorCode: 'HTTP_422',
      errorMessage: 'partner: rejected with status 422',
      attempts: 1,
      firstFailedAt: at,
      lastFailedAt: at,
    },
  });
  return { run, letter };
}
