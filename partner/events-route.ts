import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { EventStore, PartnerEvent } from './events.ts';
import { type DelayContext, delayFault } from './delay-fault.ts';
import type { ActiveFault, FaultInjector } from './faults.ts';
import { HttpError, readJsonBody, sendJson } from './http-io.ts';
import type { LedgerInput } from './ledger.ts';

/** Longest `Idempotency-Key` (= event id) accepted. */
export const MAX_EVENT_ID_LENGTH = 200;

/** What the events route needs from the server. */
export interface EventsContext extends DelayContext {
  faults: FaultInjector;
  events: EventStore;
}

/** Body of `POST /events`; unknown extra fields are ignored. */
const eventSchema = z.object({
  id: z.string().min(1).max(MAX_EVENT_ID_LENGTH),
  topic: z.string().min(1),
  aggregateType: z.string().min(1),
  aggregateId: z.string().min(1),
  payload: z.json(),
  createdAt: z.iso.datetime({ offset: true }),
});

/** Answer of `POST /events` (200) for an applied or duplicate delivery. */
export interface EventReceipt {
  id: string;
  duplicate: boolean;
}

function idempotencyKeyOf(req: IncomingMessage): string {
  const key = req.headers['idempotency-key'];
  if (typeof key !== 'string' || key.length < 1 || key.length > MAX_EVENT_ID_LENGTH) {
    throw new HttpError(
      400,
      'missing_idempotency_key',
      `header Idempotency-Key (the event id, 1..${MAX_EVENT_ID_LENGTH} chars) is required`,
    );
  }
  return key;
}

async function readEvent(req: IncomingMessage, key: string): Promise<PartnerEvent> {
  const result = eventSchema.safeParse(await readJsonBody(req));
  if (!result.success) throw new HttpError(400, 'invalid_event', z.prettifyError(result.error));
  if (result.data.id !== key) {
    throw new HttpError(400, 'key_mismatch', 'body "id" must equal the Idempotency-Key header');
  }
  return result.data;
}

/** Applies (or recognises as duplicate) the delivery, records it and answers 200 with a receipt. */
function applyAndRespond(
  res: ServerResponse,
  event: PartnerEvent,
  entry: LedgerInput,
  ctx: EventsContext,
  fault: ActiveFault | undefined,
): void {
  const { duplicate } = ctx.events.apply(event);
  ctx.ledger.record({ ...entry, status: 200, duplicate, ...(fault ? { fault: fault.kind } : {}) });
  const receipt: EventReceipt = { id: event.id, duplicate };
  // A delayed delivery may find its client gone; the event is applied all the same (it is recorded).
  if (!res.destroyed) sendJson(res, 200, receipt);
}

/**
 * Serves `POST /events` (header `Idempotency-Key` = event id, body an event) for an outbox
 * publisher: applies each event id once, answers 200 `{ id, duplicate }`, and applies at most one
 * injected fault of route `events` (`status`/`reset` leave the event unapplied; `delay` applies it
 * after the wait). Faults only see well-formed deliveries.
 *
 * Throws `HttpError` for the caller to answer and record: 400 `missing_idempotency_key`,
 * `invalid_json`, `invalid_event`, `key_mismatch`; 413 `body_too_large`. Side effects: consumes the
 * fault, applies the event, counts the delivery, appends exactly one ledger entry per delivery
 * answered or deliberately failed (plus a 499 `client_closed` one when a client leaves during a
 * delay); a delay cancelled by `close()` leaves none. The payload is never recorded.
 */
export async function handleEvents(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  ctx: EventsContext,
): Promise<void> {
  const key = req.headers['idempotency-key'];
  const base: LedgerInput = {
    method: req.method ?? 'GET',
    path: url.pathname,
    status: 0,
    ...(typeof key === 'string' ? { idempotencyKey: key } : {}),
    auth: req.headers.authorization !== undefined,
  };
  if (req.method !== 'POST') {
    ctx.ledger.record({ ...base, status: 405 });
    sendJson(res, 405, { error: 'method_not_allowed', message: 'use POST' }, { allow: 'POST' });
    return;
  }
  const event = await readEvent(req, idempotencyKeyOf(req));
  const traceparent = req.headers.traceparent;
  const entry: LedgerInput = {
    ...base,
    topic: event.topic,
    aggregateId: event.aggregateId,
    ...(typeof traceparent === 'string' ? { traceparent } : {}),
  };
  const fault = ctx.faults.take({ route: 'events', eventId: event.id, aggregateId: event.aggregateId });
  const kind = fault?.kind;
  switch (kind) {
    case undefined:
      return applyAndRespond(res, event, entry, ctx, fault);
    case 'delay': {
      // A publisher that times out while we hang is recorded when it leaves; the event is still
      // applied afterwards, so its redelivery is a duplicate.
      if ((await delayFault(res, entry, ctx, fault?.delayMs ?? 0)).fired)
        return applyAndRespond(res, event, entry, ctx, fault);
      // Cancelled by close(): never applied nor answered, so no ledger entry.
      ctx.events.countFaulted(event.id);
      req.socket.destroy();
      return;
    }
    case 'reset':
      ctx.events.countFaulted(event.id);
      ctx.ledger.record({ ...entry, status: 0, fault: kind });
      req.socket.resetAndDestroy();
      return;
    case 'status': {
      const status = fault?.status ?? 503;
      ctx.events.countFaulted(event.id);
      ctx.ledger.record({ ...entry, status, fault: kind });
      const headers: Record<string, string> = fault?.retryAfter ? { 'retry-after': fault.retryAfter } : {};
      sendJson(res, status, { error: 'injected_fault', message: `injected status ${status}` }, headers);
      return;
    }
    case 'truncate':
    case 'malformed':
    case 'schema':
    case 'page':
    case 'oversize':
    case 'loop':
    case 'empty_page':
    case 'overfull':
    case 'off_origin':
      // parseFaultSpec refuses these kinds for route "events".
      throw new Error(`fault kind ${kind} is not supported on /events`);
    default: {
      const unknownKind: never = kind;
      throw new Error(`unhandled fault kind ${String(unknownKind)}`);
    }
  }
}
