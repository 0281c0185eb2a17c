import { randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { Publisher, type PublisherOptions } from '../../worker/outbox/publisher.ts';
import type { SinkName } from '../../contract/outbox-routes.ts';
import type { Sink } from '../../worker/outbox/sinks.ts';

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

/** The outbox rows matching `where`, in `seq` (insertion) order. */
export function outboxRows(
  prisma: PrismaClient,
  where: { topic?: string; aggregateId?: string; id?: string } = {},
) {
  return prisma.outboxEvent.findMany({ where, orderBy: { seq: 'asc' } });
}

/** Sum of `takeovers` (claims taken over after a lease expired) over the rows of `topic`. */
export async function takeoversOf(prisma: PrismaClient, topic: string): Promise<number> {
  const sum = await prisma.outboxEvent.aggregate({ where: { topic }, _sum: { takeovers: true } });
  return sum._sum.takeovers ?? 0;
}

/**
 * The ids of `applied` (e.g. `partner.events.list(…)`) per aggregate, in applied order, next to
 * the ids of `inserted` per aggregate in insertion order: equal maps mean per-aggregate order held.
 */
export function orderPerAggregate(
  applied: readonly { id: string; aggregateId: string; appliedSeq: number }[],
  inserted: readonly { id: string; aggregateId: string }[],
): { applied: Record<string, string[]>; inserted: Record<string, string[]> } {
  const group = (events: readonly { id: string; aggregateId: string }[]) => {
    const out: Record<string, string[]> = {};
    for (const e of events) (out[e.aggregateId] ??= []).push(e.id);
    return out;
  };
  return {
    applied: group([...applied].sort((a, b) => a.appliedSeq - b.appliedSeq)),
    inserted: group(inserted),
  };
}

/**
 * A JetStream stream name and subject prefix of the test's own on the local NATS server (shared by
 * every test run), with a manager; the stream and the connection are dropped after the test.
 */
export async function testNatsStream(
  t: TestContext,
  label: string,
): Promise<{ stream: string; subjectPrefix: string; jsm: JetStreamManager }> {
  const run = randomUUID().slice(0, 8);
  const stream = `DF_TEST_${label}_${run}`;
  const nc = await connect({ servers: '127.0.0.1:4222' });
  const jsm = await jetstreamManager(nc);
  t.after(async () => {
    await jsm.streams.delete(stream).catch(() => false);
    await nc.close();
  });
  return { stream, subjectPrefix: `dftest.${run}`, jsm };
}
