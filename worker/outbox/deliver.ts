/**
 * Delivery of one claimed batch (R5): aggregates in parallel up to the publisher's concurrency,
 * each aggregate's events one at a time in `seq` order; after a failure the rest of that aggregate
 * waits (order). Every delivery of the batch shares one signal: the publisher's stop, or the cut-off
 * before the claim's lease runs out.
 */
import { setMaxListeners } from 'node:events';
import { ApplicationFailure } from '@temporalio/common';
import { crashPoint, type CrashPoint } from '../../runtime/crash-points.ts';
import { classify, detailsOf, failure } from '../../activities/errors.ts';
import { type Backoff, nextRetry } from '../../activities/retry/delay.ts';
import type { ClaimedEvent, FailedDelivery } from '../../db/outbox/outbox.ts';
import type { Prisma } from '../../prisma/generated/client.ts';
import { redactUrlsIn } from '../../runtime/redact.ts';
import { inDeliverySpan } from '../../runtime/trace-spans.ts';
import { type Route, type SinkName, sinkFor } from '../../contract/outbox-routes.ts';
import type { Sink } from './sinks.ts';

export type Outcome =
  | { kind: 'delivered'; id: string; result: Prisma.InputJsonValue | null; sink: string; createdAt: Date }
  | { kind: 'failed'; failure: FailedDelivery }
  | { kind: 'released'; id: string };

export interface DeliveryContext {
  sinks: ReadonlyMap<SinkName, Sink>;
  routes: readonly Route[];
  concurrency: number;
  backoff: Backoff;
  crashPoint?: CrashPoint | undefined;
  /** Set once the publisher stops claiming: nothing new starts. */
  stopping: AbortSignal;
  /** Set when the grace time is over: deliveries in flight are aborted and released. */
  abort: AbortSignal;
}

/**
 * Delivers `events` (in `seq` order). No delivery starts after `deadline`; every delivery still
 * running at `cutoff` fails with a timeout (retried later), so the batch is settled while its
 * claim holds.
 */
export async function deliverBatch(
  ctx: DeliveryContext,
  events: readonly ClaimedEvent[],
  deadline: number,
  cutoff: number,
): Promise<Outcome[]> {
  const groups = new Map<string, ClaimedEvent[]>();
  for (const e of events) {
    const key = `${e.aggregateType}\u0000${e.aggregateId}`;
    const group = groups.get(key);
    if (group) group.push(e);
    else groups.set(key, [e]);
  }
  // One signal for the whole batch instead of a timeout and a combined signal per event: those
  // were a tenth of the publisher's CPU (their timers and weak references, and the GC after them).
  const batch = new AbortController();
  setMaxListeners(0, batch.signal);
  const timer = setTimeout(
    () => batch.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    Math.max(1, cutoff - Date.now()),
  );
  const onAbort = () => batch.abort(ctx.abort.reason);
  if (ctx.abort.aborted) onAbort();
  else ctx.abort.addEventListener('abort', onAbort, { once: true });
  try {
    const queue = [...groups.values()];
    let next = 0;
    const outcomes: Outcome[] = [];
    const worker = async () => {
      for (let group = queue[next++]; group; group = queue[next++]) {
        outcomes.push(...(await deliverGroup(ctx, group, deadline, batch.signal)));
      }
    };
    await Promise.all(Array.from({ length: Math.min(ctx.concurrency, queue.length) }, worker));
    return outcomes;
  } finally {
    clearTimeout(timer);
    ctx.abort.removeEventListener('abort', onAbort);
  }
}

async function deliverGroup(
  ctx: DeliveryContext,
  group: ClaimedEvent[],
  deadline: number,
  signal: AbortSignal,
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let blocked = false;
  for (const event of group) {
    // After a failure the rest of the aggregate waits (order); when stopping or short of lease,
    // nothing new starts. Either way the event goes back unclaimed, its attempts untouched.
    if (blocked || ctx.stopping.aborted || Date.now() >= deadline) {
      outcomes.push({ kind: 'released', id: event.id });
      continue;
    }
    const outcome = await deliverOne(ctx, event, signal);
    outcomes.push(outcome);
    if (outcome.kind !== 'delivered') blocked = true;
  }
  return outcomes;
}

async function deliverOne(ctx: DeliveryContext, event: ClaimedEvent, signal: AbortSignal): Promise<Outcome> {
  const sinkName = sinkFor(ctx.routes, event.topic);
  const sink = sinkName && ctx.sinks.get(sinkName);
  try {
    if (!sink) {
      throw failure('InvalidInput', 'NO_ROUTE', `no sink is configured for topic '${event.topic}'`);
    }
    signal.throwIfAborted();
    // A sink slower than what is left of the lease fails with Timeout (retried later).
    // The delivery is a span of the trace that wrote the event (runtime/trace-spans.ts); the
    // sink hands it on to the consumer.
    const result = await inDeliverySpan({ ...event, sink: sink.name }, () =>
      sink.publish(
        {
          id: event.id,
          seq: event.seq,
          topic: event.topic,
          aggregateType: event.aggregateType,
          aggregateId: event.aggregateId,
          payload: event.payload,
          createdAt: event.createdAt,
        },
        signal,
      ),
    );
    crashPoint(ctx.crashPoint, 'publisher-after-ack');
    return { kind: 'delivered', id: event.id, result, sink: sinkName ?? 'none', createdAt: event.createdAt };
  } catch (err) {
    // Aborted by our own stop: not the sink's fault, not an attempt.
    if (ctx.abort.aborted) return { kind: 'released', id: event.id };
    return { kind: 'failed', failure: failureOf(ctx.backoff, event, err, sinkName ?? 'none') };
  }
}

function failureOf(backoff: Backoff, event: ClaimedEvent, err: unknown, sink: string): FailedDelivery {
  const classified = classify(err, `deliver ${event.topic} to ${sink}`);
  const f =
    classified instanceof ApplicationFailure
      ? classified
      : failure('Internal', 'UNCLASSIFIED', `deliver ${event.topic} to ${sink}: unexpected error`);
  const decision = nextRetry({
    attempt: event.attempts + 1,
    backoff,
    retryAfterMs: detailsOf(f)?.retryAfterMs,
    nowMs: Date.now(),
  });
  return {
    id: event.id,
    errorType: f.type ?? 'Internal',
    message: redactUrlsIn(f.message).slice(0, 500),
    retryInMs: 'retryInMs' in decision ? decision.retryInMs : 0,
    permanent: f.nonRetryable === true,
    sink,
  };
}
