/**
 * Transactional workflow start: the application enqueues "start the run of this business key" in
 * the same Prisma transaction as its own rows. Roll back, and nothing starts; commit, and the
 * outbox publisher starts the workflow — with the business key as workflow id and conflict policy
 * USE_EXISTING, so relaying the command twice still gives one run — and records the run id back
 * on the command (R5, R6).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Prisma, PrismaClient } from '../prisma/generated/client.ts';
import type { FetchRecordsInput } from '../contract/types.ts';
import { currentTraceContext } from '../runtime/trace-spans.ts';
import { LEGACY_RUN_WORKFLOW_TYPE, RUN_WORKFLOW_TYPE } from '../workflows/run-type.ts';
import {
  type DurableFetchContext,
  type PreparedFetch,
  prepareFetch,
  type StartFetchRequest,
} from './start-fetch.ts';

/** Outbox topic of start commands (routed to the `temporal` sink). */
export const START_WORKFLOW_TOPIC = 'temporal.start_workflow';

/** The command as stored in the outbox row: ids and dates only (R2). */
export const startCommandSchema = z.strictObject({
  /** The run workflow's type; commands written before the rename carry the legacy one. */
  workflowType: z.enum([RUN_WORKFLOW_TYPE, LEGACY_RUN_WORKFLOW_TYPE]),
  /** Absent from commands written before jobs were plug-ins (all the demo job's). */
  jobType: z.string().min(1).optional(),
  workflowId: z.string().min(1),
  taskQueue: z.string().min(1),
  sourceId: z.string().min(1),
  businessDate: z.string().min(1),
  input: z.custom<FetchRecordsInput>((v) => typeof v === 'object' && v !== null),
});
export type StartCommand = z.infer<typeof startCommandSchema>;

export interface EnqueueOptions extends Pick<DurableFetchContext, 'maxFutureDays' | 'maxInputBytes' | 'now'> {
  /** Task queue the run is started on. Default `durable-fetch` (DURABLE_FETCH_TASK_QUEUE's default). */
  taskQueue?: string;
}

export interface EnqueuedFetch {
  /** Id of the outbox command; pass it to {@link getEnqueuedFetch}. */
  commandId: string;
  workflowId: string;
  businessDate: string;
}

/**
 * Validates `req` inside transaction `tx` (the source must exist, be enabled and not be paused,
 * the date allowed) and writes the start command there. Nothing is started until `tx` commits
 * and a publisher relays the command.
 * @throws UserFacingError as `prepareFetch`, e.g. SOURCE_PAUSED (the caller's transaction then
 *   rolls back as usual).
 */
export async function enqueueFetch(
  tx: Prisma.TransactionClient,
  req: StartFetchRequest,
  options: EnqueueOptions = {},
): Promise<EnqueuedFetch> {
  const prepared: PreparedFetch = await prepareFetch({ ...options, prisma: tx }, req);
  const command: StartCommand = {
    workflowType: RUN_WORKFLOW_TYPE,
    jobType: prepared.jobType,
    workflowId: prepared.workflowId,
    taskQueue: options.taskQueue ?? 'durable-fetch',
    sourceId: prepared.sourceId,
    businessDate: prepared.businessDate,
    input: prepared.input,
  };
  const commandId = randomUUID();
  await tx.outboxEvent.create({
    data: {
      id: commandId,
      topic: START_WORKFLOW_TOPIC,
      // One aggregate per business key: commands for the same key are relayed in order.
      aggregateType: 'workflow',
      aggregateId: prepared.workflowId,
      payload: command as unknown as Prisma.InputJsonObject,
      // The application's span, when it traces: the run it starts continues that trace.
      ...withTraceContext(currentTraceContext()),
    },
  });
  return { commandId, workflowId: prepared.workflowId, businessDate: prepared.businessDate };
}

export interface EnqueuedFetchState {
  status: 'pending' | 'published' | 'dead';
  workflowId: string;
  /** Temporal run id, once the publisher has started (or found) the run. */
  runId: string | undefined;
  /**
   * True when the key's run had already succeeded, so nothing was started. (A run still open is
   * joined through USE_EXISTING without such a flag: `runId` is then that run's.)
   */
  existing: boolean;
  lastError: string | undefined;
}

/** Where an enqueued start stands; undefined for an unknown (or already purged) command. */
export async function getEnqueuedFetch(
  prisma: Pick<PrismaClient, 'outboxEvent'>,
  commandId: string,
): Promise<EnqueuedFetchState | undefined> {
  const row = await prisma.outboxEvent.findUnique({ where: { id: commandId } });
  if (!row || row.topic !== START_WORKFLOW_TOPIC) return undefined;
  const result = row.result as { runId?: unknown; existing?: unknown } | null;
  return {
    status: row.status,
    workflowId: row.aggregateId,
    runId: typeof result?.runId === 'string' ? result.runId : undefined,
    existing: result?.existing === true,
    lastError: row.lastError ?? undefined,
  };
}

const withTraceContext = (traced: Record<string, string> | undefined) =>
  traced ? { traceContext: traced } : {};
