import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { Publisher, type PublisherOptions } from '../../worker/outbox/publisher.ts';
import type { Sink, SinkName } from '../../worker/outbox/sinks.ts';

/** Publisher options for tests: small leases and backoffs so that retries happen within a test. */
export function testPublisherOptions(overrides: Partial<PublisherOptions> = {}): PublisherOptions {
  return {
    batchSize: 50,
    concurrency: 8,
    leaseMs: 10_000,
    pollMs: 20,
    maxAttempts: 5,
    backoff: { initialMs: 50, coefficient: 2, maximumMs: 500 },
    routes: [{ pattern: '*', sink: 'webhook' }],
    ...overrides,
  };
}

export function testPublisher(
  prisma: PrismaClient,
  sinks: Partial<Record<SinkName, Sink>>,
  overrides: Partial<PublisherOptions> = {},
): Publisher {
  return new Publisher(
    prisma,
    new Map(Object.entries(sinks) as [SinkName, Sink][]),
    testPublisherOptions(overrides),
    pino({ level: 'silent' }),
  );
}

export interface TestEvent {
  id: string;
  topic: string;
  aggregateId: string;
  payload: { n: number };
}

/**
 * Inserts `perAggregate` events for each of `aggregates` (interleaved, so `seq` order mixes
 * aggregates), topic `topic`, aggregate type `test`. Returns them in insertion order.
 */
export async function insertEvents(
  prisma: PrismaClient,
  opts: { aggregates: string[]; perAggregate: number; topic?: string },
): Promise<TestEvent[]> {
  const events: TestEvent[] = [];
  for (let n = 0; n < opts.perAggregate; n++) {
    for (const aggregateId of opts.aggregates) {
      events.push({ id: randomUUID(), topic: opts.topic ?? 'test.event', aggregateId, payload: { n } });
    }
  }
  for (let i = 0; i < events.length; i += 1000) {
    await prisma.outboxEvent.createMany({
      data: events.slice(i, i + 1000).map((e) => ({ ...e, aggregateType: 'test' })),
    });
  }
  return events;
}

/** Polls `condition` every 25 ms until it holds, or fails after `timeoutMs`. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
