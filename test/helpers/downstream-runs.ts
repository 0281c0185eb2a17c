/**
 * What the end-to-end tests of downstream isolation, fairness and rate limits (R8) share: the
 * downstream rows workers read at start, many runs started at once, the partner's calls of a
 * source as times, and the most calls any one-second window saw.
 */
import { startFetch, type StartedFetch } from '../../client/start-fetch.ts';
import {
  type DownstreamSettingsInput,
  downstreamSettingsSchema,
  rowOf,
} from '../../db/ledger/downstreams.ts';
import type { Client } from '@temporalio/client';
import type { PartnerServer } from '../../partner/server.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { WorkerStack } from './worker-stack.ts';

/** Writes a downstream's row as `sources apply` would, from its settings (defaults filled in). */
export async function createDownstream(prisma: PrismaClient, input: DownstreamSettingsInput): Promise<void> {
  const settings = downstreamSettingsSchema.parse(input);
  await prisma.downstream.create({ data: { id: settings.id, ...rowOf(settings) } });
}

/** `n` consecutive business dates from `first` (YYYY-MM-DD). */
export function datesFrom(first: string, n: number): string[] {
  const start = Date.parse(`${first}T00:00:00Z`);
  return Array.from({ length: n }, (_, i) => new Date(start + i * 86_400_000).toISOString().slice(0, 10));
}

/** Starts a run of `sourceId` for each date, `parallel` starts at a time. */
export async function startRuns(
  stack: Pick<WorkerStack, 'client' | 'db' | 'taskQueue'>,
  sourceId: string,
  dates: readonly string[],
  parallel = 20,
): Promise<StartedFetch[]> {
  const ctx = { temporal: stack.client, prisma: stack.db.prisma, taskQueue: stack.taskQueue };
  const started: StartedFetch[] = [];
  for (let i = 0; i < dates.length; i += parallel) {
    const batch = dates.slice(i, i + parallel);
    started.push(
      ...(await Promise.all(batch.map((date) => startFetch(ctx, { sourceId, date, requestedBy: 'test' })))),
    );
  }
  return started;
}

/** When the partner answered each records call of `sourceId` (ms since the epoch), in order. */
export function callTimes(partner: PartnerServer, sourceId: string): number[] {
  return partner.ledger
    .entries({ sourceId })
    .map((e) => Date.parse(e.at))
    .sort((a, b) => a - b);
}

/** The most of `times` (sorted) inside any window of `windowMs` starting at one of them. */
export function peakInWindow(times: readonly number[], windowMs = 1_000): number {
  let peak = 0;
  let end = 0;
  for (let start = 0; start < times.length; start++) {
    while (end < times.length && (times[end] as number) < (times[start] as number) + windowMs) end++;
    peak = Math.max(peak, end - start);
  }
  return peak;
}

/** One page fetch of a run, as its history tells it. */
export interface PageFetch {
  /** When it was scheduled (ms since the epoch). */
  scheduledAt: number;
  taskQueue: string | undefined;
  fairnessKey: string | undefined;
  fairnessWeight: number | undefined;
  /** The worker that started its last attempt. */
  identity: string | undefined;
}

const msOf = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(t?.seconds ?? 0) * 1000 + Math.round((t?.nanos ?? 0) / 1e6);

/** The page fetches the latest execution of `workflowId` scheduled, in order. */
export async function pageFetches(client: Client, workflowId: string): Promise<PageFetch[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const fetches = new Map<string, PageFetch>();
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'fetchPage') {
      fetches.set(String(e.eventId), {
        scheduledAt: msOf(e.eventTime),
        taskQueue: scheduled.taskQueue?.name ?? undefined,
        fairnessKey: scheduled.priority?.fairnessKey ?? undefined,
        fairnessWeight: scheduled.priority?.fairnessWeight ?? undefined,
        identity: undefined,
      });
    }
    const started = e.activityTaskStartedEventAttributes;
    const fetch = started ? fetches.get(String(started.scheduledEventId)) : undefined;
    if (fetch) fetch.identity = started?.identity ?? undefined;
  }
  return [...fetches.values()];
}
