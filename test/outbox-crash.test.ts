// The outbox publisher killed between a sink's acknowledgement and its mark-published write (crash
// point publisher-after-ack, R5, R12a): `durable-fetch publisher` runs as a real child process
// that SIGKILLs itself right after the sink acknowledged an event. The row must stay pending under
// the dead publisher's claim; once that lease has expired a second publisher takes it over and
// delivers it again, and the sink's dedupe (the partner's Idempotency-Key, JetStream's Nats-Msg-Id)
// turns the re-delivery into a recorded duplicate: applied once, stored once, nothing lost.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { JetStreamApiError, jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { waitFor } from './helpers/outbox.ts';
import { spawnTs, type Spawned, within } from './helpers/process.ts';

const NATS_URL = 'nats://127.0.0.1:4222';
/** Short, so the takeover happens within the test; well above a delivery's duration. */
const LEASE_MS = 2_000;
const WEBHOOK_TOPIC = 'crash.webhook_event';
const NATS_TOPIC = 'crash.nats_event';
const ROUTES = `${WEBHOOK_TOPIC}=webhook,${NATS_TOPIC}=nats`;

/** A `durable-fetch publisher` process; `ended` tells its exit code or the signal that killed it. */
function spawnPublisher(env: Record<string, string>): Spawned {
  return spawnTs(['bin/durable-fetch.js', 'publisher'], env);
}

/** A JetStream stream and subject prefix of this test only, and a way to look into it. */
async function useNatsStream() {
  const nc = await connect({ servers: NATS_URL, name: 'durable-fetch-test' });
  const jsm = await jetstreamManager(nc);
  const id = randomUUID().replaceAll('-', '');
  const stream = `DF_TEST_CRASH_${id}`;
  const subjectPrefix = `df-test-crash-${id}`;
  /** The stream's info counting messages per subject under `subject`, or null before it exists. */
  const info = async (subject: string): Promise<StreamInfo | null> => {
    try {
      return await jsm.streams.info(stream, { subjects_filter: subject });
    } catch (err) {
      if (err instanceof JetStreamApiError && err.status === 404) return null;
      throw err;
    }
  };
  return {
    stream,
    subjectPrefix,
    /** Messages in the whole stream and on `subject`; zero while the stream does not exist. */
    async counts(subject: string): Promise<{ stream: number; subject: number }> {
      const i = await info(subject);
      return { stream: i?.state.messages ?? 0, subject: i?.state.subjects?.[subject] ?? 0 };
    },
    lastMessage: (subject: string) => jsm.streams.getMessage(stream, { last_by_subj: subject }),
    async drop(): Promise<void> {
      try {
        if (await info(`${subjectPrefix}.>`)) await jsm.streams.delete(stream);
      } finally {
        await nc.close();
      }
    },
  };
}

async function eventRow(db: TestDatabase, id: string) {
  return db.prisma.outboxEvent.findUniqueOrThrow({ where: { id } });
}

/** The partner's view of the webhook deliveries: each one's receipt, and the events it applied. */
function webhookView(partner: PartnerServer, id: string) {
  const ledger = partner.ledger.entries({ path: '/events' });
  for (const entry of ledger) {
    assert.equal(entry.idempotencyKey, id, JSON.stringify(entry));
    assert.equal(entry.status, 200, JSON.stringify(entry));
  }
  return {
    receipts: ledger.map((e) => ({ duplicate: e.duplicate })),
    deliveries: partner.events.deliveries(),
    applied: partner.events.list(),
  };
}

/**
 * One sink: publisher A (crash point armed) delivers one event and dies after the ack; publisher
 * B takes the event over once A's lease has expired, delivers it again and marks it published.
 */
async function crashAfterAck(sink: 'webhook' | 'nats'): Promise<{ takeoverMs: number }> {
  const db = await useTestDatabase();
  const nats = await useNatsStream().catch(async (err: unknown) => {
    await db.drop();
    throw err;
  });
  let partner: PartnerServer | undefined;
  const publishers: Spawned[] = [];
  try {
    partner = await startPartner({ port: 0 });
    const env = {
      DATABASE_URL: db.url,
      LOG_LEVEL: 'warn',
      DURABLE_FETCH_OUTBOX_ROUTES: ROUTES,
      DURABLE_FETCH_OUTBOX_LEASE_MS: String(LEASE_MS),
      DURABLE_FETCH_OUTBOX_POLL_MS: '50',
      DURABLE_FETCH_OUTBOX_GRACE_MS: '5000',
      DURABLE_FETCH_WEBHOOK_URL: `${partner.url}/events`,
      DURABLE_FETCH_NATS_URL: NATS_URL,
      DURABLE_FETCH_NATS_STREAM: nats.stream,
      DURABLE_FETCH_NATS_SUBJECT_PREFIX: nats.subjectPrefix,
      // No periodic cleanup pass in these short-lived processes.
      DURABLE_FETCH_CLEANUP_INTERVAL_MS: '0',
    };
    const topic = sink === 'webhook' ? WEBHOOK_TOPIC : NATS_TOPIC;
    const id = randomUUID();
    await db.prisma.outboxEvent.create({
      data: { id, topic, aggregateType: 'crash-test', aggregateId: `agg-${sink}`, payload: { sink, n: 1 } },
    });

    // Publisher A: claims the event, the sink acknowledges it, and A dies before marking it.
    const a = spawnPublisher({ ...env, DURABLE_FETCH_CRASH_POINT: 'publisher-after-ack' });
    publishers.push(a);
    const exit = await within(a.ended, 90_000, () => `publisher A to die:\n${a.output()}`);
    assert.deepEqual(exit, { code: null, signal: 'SIGKILL' }, a.output());
    assert.match(a.output(), /crash point publisher-after-ack: SIGKILL/);

    // Not marked: still pending under A's claim, no attempt counted, no receipt.
    const orphaned = await eventRow(db, id);
    assert.equal(orphaned.status, 'pending');
    assert.ok(orphaned.claimToken, 'the dead publisher still holds the claim');
    const claimedUntil = orphaned.claimedUntil ?? assert.fail('a claimed row has claimed_until');
    assert.equal(orphaned.takeovers, 0);
    assert.equal(orphaned.attempts, 0);
    assert.equal(orphaned.result, null);
    assert.equal(orphaned.publishedAt, null);
    // … yet the sink has it: the crash did follow the acknowledgement.
    const subject = `${nats.subjectPrefix}.${NATS_TOPIC}`;
    if (sink === 'webhook') {
      const atCrash = webhookView(partner, id);
      assert.deepEqual(atCrash.receipts, [{ duplicate: false }]);
      assert.equal(atCrash.deliveries, 1);
      assert.deepEqual(
        atCrash.applied.map((e) => e.id),
        [id],
      );
    } else {
      assert.deepEqual(await nats.counts(subject), { stream: 1, subject: 1 });
    }

    // Publisher B: waits out A's lease, takes the event over and delivers it again.
    const b = spawnPublisher(env);
    publishers.push(b);
    await b.waitFor(/publisher running/, 60_000);
    await waitFor(
      async () => (await eventRow(db, id)).status === 'published',
      `publisher B to publish the event:\n${b.output()}`,
      60_000,
    );
    assert.equal(await b.stop('SIGTERM', 30_000), 0, b.output());
    assert.match(b.output(), /publisher stopped \(1 event published\)/);

    const published = await eventRow(db, id);
    assert.equal(published.status, 'published');
    assert.equal(published.takeovers, 1, 'taken over exactly once');
    assert.equal(published.attempts, 0, 'a takeover is not a failed attempt');
    assert.equal(published.claimToken, null);
    assert.equal(published.claimedUntil, null);
    const publishedAt = published.publishedAt ?? assert.fail('a published row has published_at');
    // Both times are the database's: B could not claim before A's lease ran out.
    assert.ok(
      publishedAt.getTime() >= claimedUntil.getTime(),
      `published ${publishedAt.toISOString()} before A's lease ended ${claimedUntil.toISOString()}`,
    );

    if (sink === 'webhook') {
      // Delivered twice, applied once; the second receipt is the one on the row.
      const after = webhookView(partner, id);
      assert.deepEqual(after.receipts, [{ duplicate: false }, { duplicate: true }]);
      assert.equal(after.deliveries, 2);
      assert.equal(partner.events.duplicates(), 1);
      assert.equal(after.applied.length, 1, 'applied once');
      assert.equal(after.applied[0]?.id, id);
      assert.equal(after.applied[0]?.deliveries, 2);
      assert.deepEqual(after.applied[0]?.payload, { sink, n: 1 });
      assert.deepEqual(published.result, { duplicate: true });
    } else {
      // Stored once; the second PubAck names the message A's delivery stored.
      assert.deepEqual(await nats.counts(subject), { stream: 1, subject: 1 });
      const stored = (await nats.lastMessage(subject)) ?? assert.fail('no message on the subject');
      assert.equal(stored.header.get('Nats-Msg-Id'), id);
      const body = stored.json<{ id: string; topic: string; payload: unknown }>();
      assert.deepEqual([body.id, body.topic, body.payload], [id, NATS_TOPIC, { sink, n: 1 }]);
      assert.deepEqual(published.result, { stream: nats.stream, streamSeq: stored.seq, duplicate: true });
    }
    return { takeoverMs: publishedAt.getTime() - claimedUntil.getTime() };
  } finally {
    for (const p of publishers) await p.stop('SIGKILL', 5_000);
    await partner?.close();
    await nats.drop();
    await db.drop();
  }
}

// Each sink has its own database, partner and stream; they mostly wait out the lease.
describe('outbox crash: publisher killed after the ack, before the mark', { concurrency: true }, () => {
  for (const sink of ['webhook', 'nats'] as const) {
    it(
      `outbox-crash: ${sink}: the event is delivered again after the lease, deduped by the sink, published once`,
      { timeout: 180_000 },
      async (t) => {
        const { takeoverMs } = await crashAfterAck(sink);
        t.diagnostic(`published ${(takeoverMs / 1000).toFixed(1)} s after the dead publisher's lease ended`);
      },
    );
  }
});
