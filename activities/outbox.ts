/**
 * Writing outbox events (R5). Always inside the caller's transaction, next to the business rows
 * the event announces; the publisher (issue #4) delivers them later, at least once.
 */
import type { Prisma } from '../prisma/generated/client.ts';
import { stableUuid } from './ids.ts';

export const PAGE_STORED_TOPIC = 'fetch.page_stored';
export const RUN_COMPLETED_TOPIC = 'fetch.run_completed';

export interface FetchRunEvent {
  topic: typeof PAGE_STORED_TOPIC | typeof RUN_COMPLETED_TOPIC;
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
  const id = eventIdFor(event.stepKey, event.topic);
  await tx.outboxEvent.create({
    data: {
      id,
      topic: event.topic,
      aggregateType: 'fetch_run',
      aggregateId: event.fetchRunId,
      payload: event.payload,
      createdAt: event.now,
      availableAt: event.now,
    },
  });
  return id;
}
