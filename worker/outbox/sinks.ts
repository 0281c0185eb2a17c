/**
 * Where outbox events go (R5). A sink delivers one event and resolves once the destination has
 * acknowledged it; it never marks anything itself. Every sink must let its destination drop a
 * re-delivery of the same event id (the publisher delivers at least once).
 *
 * Adding a sink: implement {@link Sink}, give it a name in `SINK_NAMES` (contract/outbox-routes.ts), build it in
 * `createSinks` (worker/outbox/create-publisher.ts), and route topics to it with
 * DURABLE_FETCH_OUTBOX_ROUTES.
 */
import type { SinkName } from '../../contract/outbox-routes.ts';
import type { Prisma } from '../../prisma/generated/client.ts';

/** One event as a sink sends it: the row's identity, order and payload. */
export interface OutboxMessage {
  /** The consumer's dedupe key: `Idempotency-Key` for webhooks, `Nats-Msg-Id` for JetStream. */
  id: string;
  /** Position in the outbox (increasing): consumers can order one aggregate's events by it. */
  seq: string;
  topic: string;
  aggregateType: string;
  aggregateId: string;
  payload: unknown;
  createdAt: Date;
}

export interface Sink {
  readonly name: SinkName;
  /**
   * Delivers `message` and resolves with the destination's receipt (stored on the row), once the
   * destination has acknowledged it. Rejects with anything; the publisher classifies it (the error
   * types of contract/error-types.ts) to decide between a retry and `dead`. Must stop promptly when `signal` aborts.
   */
  publish(message: OutboxMessage, signal: AbortSignal): Promise<Prisma.InputJsonValue | null>;
  /** Releases connections. */
  close(): Promise<void>;
}
