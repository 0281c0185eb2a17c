/**
 * NATS JetStream sink: publishes each event to `<prefix>.<topic>` with `Nats-Msg-Id: <event id>`,
 * so the stream's duplicate window drops a re-delivery (the PubAck then says `duplicate`). The
 * stream is created when missing, with a duplicate window that must outlast the publisher's lease
 * plus its retry backoff; otherwise a late re-delivery is stored twice.
 */
import { jetstream, jetstreamManager, JetStreamApiError, type JetStreamClient } from '@nats-io/jetstream';
import { connect, headers, type MsgHdrs, nanos, type NatsConnection } from '@nats-io/transport-node';
import { failure, httpStatusFailure } from '../../activities/errors.ts';
import { currentTraceContext } from '../../runtime/trace-spans.ts';
import type { OutboxMessage, Sink } from './sinks.ts';

export interface NatsSinkOptions {
  /** Server URLs, comma-separated (`nats://127.0.0.1:4222`). */
  servers: string;
  stream: string;
  /** Subjects are `<subjectPrefix>.<topic>`; the stream captures `<subjectPrefix>.>`. */
  subjectPrefix: string;
  duplicateWindowMs: number;
  /** Max wait for a PubAck. */
  timeoutMs: number;
}

/** Maps a NATS error to one of the error types of activities/errors.ts: the server's status for API errors, else unavailable. */
function natsFailure(err: unknown): unknown {
  if (err instanceof JetStreamApiError) return httpStatusFailure(err.status, 'JetStream publish');
  const name = err instanceof Error ? err.name : 'Error';
  if (/timeout/i.test(name)) return failure('Timeout', 'NATS_TIMEOUT', 'JetStream publish: no ack in time');
  return failure('UpstreamUnavailable', `NATS_${name}`, `JetStream publish: NATS unavailable (${name})`);
}

/** Settles like `promise`, or rejects with the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export function createNatsSink(options: NatsSinkOptions): Sink {
  let ready: Promise<{ nc: NatsConnection; js: JetStreamClient }> | undefined;

  const open = async () => {
    const nc = await connect({
      servers: options.servers.split(',').map((s) => s.trim()),
      name: 'durable-fetch-publisher',
      maxReconnectAttempts: -1,
      // Without it every publish builds two errors up front (stack traces for a timeout that
      // rarely comes): a sixth of the relay's CPU. Failures are classified by their type anyway.
      noAsyncTraces: true,
    });
    try {
      const jsm = await jetstreamManager(nc);
      const subjects = [`${options.subjectPrefix}.>`];
      try {
        await jsm.streams.info(options.stream);
      } catch (err) {
        if (!(err instanceof JetStreamApiError) || err.status !== 404) throw err;
        await jsm.streams.add({
          name: options.stream,
          subjects,
          duplicate_window: nanos(options.duplicateWindowMs),
        });
      }
      return { nc, js: jetstream(nc, { timeout: options.timeoutMs }) };
    } catch (err) {
      await nc.close();
      throw err;
    }
  };

  return {
    name: 'nats',
    async publish(message: OutboxMessage, signal: AbortSignal) {
      signal.throwIfAborted();
      let current: Promise<{ nc: NatsConnection; js: JetStreamClient }> | undefined;
      try {
        ready ??= open().catch((err: unknown) => {
          ready = undefined; // the next delivery tries to connect again
          throw err;
        });
        current = ready;
        const { js } = await current;
        const data = JSON.stringify({
          id: message.id,
          seq: message.seq,
          topic: message.topic,
          aggregateType: message.aggregateType,
          aggregateId: message.aggregateId,
          payload: message.payload,
          createdAt: message.createdAt.toISOString(),
        });
        // The delivery's span (worker/outbox/deliver.ts) as the consumer's parent, in the
        // message's headers as W3C `traceparent`, when the publisher traces.
        const traced = currentTraceContext();
        const ack = await abortable(
          js.publish(`${options.subjectPrefix}.${message.topic}`, data, {
            msgID: message.id,
            timeout: options.timeoutMs,
            ...(traced ? { headers: natsHeadersOf(traced) } : {}),
          }),
          signal,
        );
        return { stream: ack.stream, streamSeq: ack.seq, duplicate: ack.duplicate };
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        // Anything but the server's own API answer (no responders: the stream was deleted; a
        // broken connection): start over with a fresh connection that ensures the stream again.
        if (!(err instanceof JetStreamApiError) && current && ready === current) {
          ready = undefined;
          void current.then(({ nc }) => nc.close()).catch(() => undefined);
        }
        throw natsFailure(err);
      }
    },
    async close() {
      const current = ready;
      ready = undefined;
      // close(), not drain(): nothing is subscribed, every publish was awaited, and drain() waits
      // for a server that may be gone.
      if (current) await (await current.catch(() => undefined))?.nc.close();
    },
  };
}

function natsHeadersOf(carrier: Record<string, string>): MsgHdrs {
  const h = headers();
  for (const [name, value] of Object.entries(carrier)) h.set(name, value);
  return h;
}
