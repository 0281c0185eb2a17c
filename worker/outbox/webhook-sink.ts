/**
 * HTTP webhook sink: POSTs each event as JSON with `Idempotency-Key: <event id>`; any 2xx is the
 * acknowledgement. The receiver must dedupe on that key (the demo partner's `POST /events` does).
 * Failures are typed by status like partner calls (429/5xx retry, other 4xx are permanent).
 */
import type { HttpClient } from '../../activities/http.ts';
import type { OutboxMessage, Sink } from './sinks.ts';

export function createWebhookSink(http: HttpClient, url: URL): Sink {
  return {
    name: 'webhook',
    async publish(message: OutboxMessage, signal: AbortSignal) {
      const body = await http.postJson(
        url,
        {
          id: message.id,
          seq: message.seq,
          topic: message.topic,
          aggregateType: message.aggregateType,
          aggregateId: message.aggregateId,
          payload: message.payload,
          createdAt: message.createdAt.toISOString(),
        },
        { signal, headers: { 'idempotency-key': message.id }, what: 'webhook delivery' },
      );
      const duplicate = (body as { duplicate?: unknown } | null)?.duplicate;
      return typeof duplicate === 'boolean' ? { duplicate } : null;
    },
    close: () => http.close(),
  };
}
