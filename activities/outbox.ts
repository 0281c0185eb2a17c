/**
 * Writing outbox events (R5). Always inside the caller's transaction, next to the business rows
 * the event announces; the publisher (worker/outbox/) delivers them later, at least once.
 */
import { insertOutboxEvents, type NewOutboxEvent } from '../db/outbox/outbox.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import { stableUuid } from './ids.ts';

export const PAGE_STORED_TOPIC = 'fetch.page_stored';
export const RUN_COMPLETED_TOPIC = 'fetch.run_completed';

export interface FetchRunEvent {
  topic: string;
  /** Idempotency key of the step that emits the event: the event id derives from it. */
  stepKey: string;
  fetchRunId: string;
  payload: Prisma.InputJsonObject;
  now: Date;
}

/** The id of a step's event: the same step can never produce two different events. */
export function eventIdFor(stepKey: string, topic: string): string {
  return stableUuid(`${stepKey}:${topic}`);
}

/**
 * Inserts one event of a FetchRun aggregate in transaction `tx`; returns its id. Not idempotent by
 * itself: the caller's idempotency record (or run state) guarantees it runs once per step, and the
 * derived id makes a second insert fail rather than duplicate.
 */
export async function insertRunEvent(tx: Prisma.TransactionClient, event: FetchRunEvent): Promise<string> {
  const row = runEventRow(event);
  await insertOutboxEvents(tx, [row]);
  return row.id;
}

/** The outbox row of a run event, with its derived id (see {@link insertRunEvent}). */
export function runEventRow(event: FetchRunEvent): NewOutboxEvent {
  return {
    id: eventIdFor(event.stepKey, event.topic),
    topic: event.topic,
    aggregateType: 'fetch_run',
    aggregateId: event.fetchRunId,
    payload: event.payload,
    now: event.now,
  };
}

/**
 * The rows of the events a job's step emits, in order, with their ids. The first event of a topic
 * has the id {@link eventIdFor} gives the step and topic (as a step's one event always had); a
 * further event of the same topic takes its position in the name.
 */
export function jobEventRows(step: {
  stepKey: string;
  fetchRunId: string;
  events: readonly { topic: string; payload: Prisma.InputJsonObject }[];
  now: Date;
}): NewOutboxEvent[] {
  const seen = new Map<string, number>();
  return step.events.map((event) => {
    const n = seen.get(event.topic) ?? 0;
    seen.set(event.topic, n + 1);
    const topic = n === 0 ? event.topic : `${event.topic}#${n}`;
    return {
      id: eventIdFor(step.stepKey, topic),
      topic: event.topic,
      aggregateType: 'fetch_run',
      aggregateId: step.fetchRunId,
      payload: event.payload,
      now: step.now,
    };
  });
}
