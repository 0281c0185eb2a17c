/**
 * HTTP webhook sink: POSTs each event as JSON with `Idempotency-Key: <event id>`; any 2xx is the
 * acknowledgement. The receiver must dedupe on that key (the demo partner's `POST /events` does).
 * Failures are typed by status like partner calls (408/429/5xx retry, other 4xx are permanent),
 * except 409: receivers answer it while a request with the same key is still in flight (as after
 * a lease takeover), so it is retried too.
 */
import { ApplicationFailure } from '@temporalio/common';
import { detailsOf, failure } from '../../activities/errors.ts';
import type { HttpClient } from '../../activities/http.ts';
import type { OutboxMessage, Sink } from './sinks.ts';

export function createWebhookSink(http: HttpClient, url: URL): Sink {
  return {
    name: 'webhook',
    async publish(message: OutboxMessage, signal: AbortSignal) {
      const body = await http
        .postJson(
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
        )
        .catch((err: unknown) => {
          if (err instanceof ApplicationFailure && detailsOf(err)?.code === 'HTTP_409') {
            throw failure('UpstreamUnavailable', 'HTTP_409', 'webhook delivery: conflict (409), will retry');
          }
          throw err;
        });
      const duplicate = (body as { duplicate?: unknown } | null)?.duplicate;
      return typeof duplicate === 'boolean' ? { duplicate } : null;
    },
    close: () => http.close(),
  };
}
