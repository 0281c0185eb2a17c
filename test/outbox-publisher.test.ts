// The outbox publisher against real PostgreSQL and the demo partner's real webhook endpoint (R5, R1).
//
// Every test below the first gets a database of its own: a publisher claims whatever is due in
// `outbox_event`, so rows left by one test (dead, retrying, claimed) would otherwise be picked up
// by another's publisher. Topics and aggregate ids are unique per test as well, because the
// partner (and its applied-events store) is shared by the whole file.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it, type TestContext } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import pg from 'pg';
import { createHttpClient } from '../activities/http.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { createPrisma } from '../db/client.ts';
import { createNatsSink } from '../worker/outbox/nats-sink.ts';
import type { Publisher } from '../worker/outbox/publisher.ts';
import type { Sink } from '../worker/outbox/sinks.ts';
import { claimBatch, type FailedDelivery, markFailed, markPublished, release } from '../db/outbox/outbox.ts';
import { listDead, requeueDead } from '../db/outbox/admin.ts';
import { createWebhookSink } from '../worker/outbox/webhook-sink.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { startPgProxy } from './helpers/pg-proxy.ts';
import {
  insertEvents,
  orderPerAggregate,
  outboxRows,
  takeoversOf,
  testNatsStream,
  testPublisher,
  waitFor,
} from './helpers/outbox.ts';
import { engineConnection } from '../db/pool-config.ts';

let db: TestDatabase;
let partner: PartnerServer;
const openSinks: Sink[] = [];

before(async () => {
  [db, partner] = await Promise.all([useTestDatabase(), startPartner({ port: 0 })]);
});
after(async () => {
  await Promise.all(openSinks.map((s) => s.close()));
  await partner?.close();
  await db?.drop();
});

const webhook = () => {
  const sink = createWebhookSink(
    createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 5_000 }),
    new URL(`${partner.url}/events`),
  );
  openSinks.push(sink);
  return sink;
};

/** A short unique suffix for topics and aggregate ids. */
const uid = () => randomUUID().slice(0, 8);

/** A database of the test's own, dropped after it. */
async function freshDatabase(t: TestContext): Promise<TestDatabase> {
  const fresh = await useTestDatabase();
  t.after(() => fresh.drop());
  return fresh;
}

/** A plain pg session on `url` (not part of any Prisma pool), ended after the test. */
async function session(t: TestContext, url: string): Promise<pg.Client> {
  const client = new pg.Client(engineConnection(url));
  client.on('error', () => {});
  await client.connect();
  t.after(() => client.end().catch(() => undefined));
  return client;
}

async function stopAll(publishers: Publisher[]): Promise<void> {
  await Promise.all(publishers.map((p) => p.stop(1_000)));
}

const failedDelivery = (id: string, overrides: Partial<FailedDelivery> = {}): FailedDelivery => ({
  id,
  errorType: 'UpstreamUnavailable',
  message: 'test failure',
  retryInMs: 0,
  permanent: false,
  ...overrides,
});

describe('outbox publisher', () => {
  it('delivers every event once to the webhook, in order per aggregate, and marks it published', async () => {
    const events = await insertEvents(db.prisma, {
      aggregates: ['a1', 'a2', 'a3'],
      perAggregate: 20,
      topic: 'smoke.one',
    });
    const publisher = testPublisher(db.prisma, { webhook: webhook() });
    publisher.start();
    await waitFor(
      async () =>
        (await db.prisma.outboxEvent.count({ where: { topic: 'smoke.one', status: 'published' } })) === 60,
      'all published',
    );
    await publisher.stop(1_000);
    const applied = partner.events.list({ topic: 'smoke.one' });
    assert.equal(applied.length, 60);
    assert.equal(partner.events.duplicates({ topic: 'smoke.one' }), 0);
    for (const agg of ['a1', 'a2', 'a3']) {
      const order = applied.filter((e) => e.aggregateId === agg).map((e) => e.id);
      assert.deepEqual(
        order,
        events.filter((e) => e.aggregateId === agg).map((e) => e.id),
      );
    }
    assert.equal(publisher.stats.published, 60);
  });

  it('fencing: a stale claimer cannot mark, fail or release an event taken over by another; live leases are never claimed', async (t) => {
    const { prisma } = await freshDatabase(t);
    const topic = `fence.${uid()}`;
    const [x1, x2] = await insertEvents(prisma, { aggregates: [`fence-x-${uid()}`], perAggregate: 2, topic });
    const [y1] = await insertEvents(prisma, { aggregates: [`fence-y-${uid()}`], perAggregate: 1, topic });
    assert.ok(x1 && x2 && y1);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const ids = (events: { id: string }[]) => events.map((e) => e.id);

    // A leases x1 and x2; B, claiming after it, gets only what A does not hold; C gets nothing.
    assert.deepEqual(ids(await claimBatch(prisma, { token: a, limit: 2, leaseMs: 60_000 })), [x1.id, x2.id]);
    assert.deepEqual(ids(await claimBatch(prisma, { token: b, limit: 10, leaseMs: 60_000 })), [y1.id]);
    assert.deepEqual(await claimBatch(prisma, { token: c, limit: 10, leaseMs: 60_000 }), []);

    // A's lease runs out (A stalled): C takes both over, each counting one takeover.
    await prisma.$executeRaw`
      UPDATE outbox_event SET claimed_until = now() - interval '1 second' WHERE claim_token = ${a}::uuid`;
    assert.deepEqual(ids(await claimBatch(prisma, { token: c, limit: 10, leaseMs: 60_000 })), [x1.id, x2.id]);
    const takenOver = await outboxRows(prisma, { topic });
    assert.deepEqual(
      takenOver.map((r) => [r.id, r.claimToken, r.takeovers, r.attempts, r.status]),
      [
        [x1.id, c, 1, 0, 'pending'],
        [x2.id, c, 1, 0, 'pending'],
        [y1.id, b, 0, 0, 'pending'],
      ],
    );

    // A wakes up: every write it tries is rejected by the token check and changes nothing.
    const stale = await markPublished(prisma, a, [
      { id: x1.id, result: { from: 'a' } },
      { id: x2.id, result: null },
    ]);
    assert.deepEqual([...stale], []);
    assert.equal(await markFailed(prisma, a, failedDelivery(x1.id), 5), undefined);
    assert.equal(await markFailed(prisma, a, failedDelivery(x2.id, { permanent: true }), 5), undefined);
    assert.equal(await release(prisma, a, [x1.id, x2.id]), 0);
    // Nor can a token that never held the row (B's) touch it.
    assert.deepEqual([...(await markPublished(prisma, b, [{ id: x1.id, result: null }]))], []);
    assert.deepEqual(await outboxRows(prisma, { topic }), takenOver, 'rows unchanged by stale writes');

    // C, the current owner, finishes: x1 published, x2 failed and due again in an hour.
    assert.deepEqual([...(await markPublished(prisma, c, [{ id: x1.id, result: { from: 'c' } }]))], [x1.id]);
    assert.equal(await markFailed(prisma, c, failedDelivery(x2.id, { retryInMs: 3_600_000 }), 5), 'pending');
    // A published row is final even for the token that published it.
    assert.equal(await markFailed(prisma, c, failedDelivery(x1.id), 5), undefined);
    assert.equal(await release(prisma, c, [x1.id]), 0);
    // x2 waits for its retry and y1 is under B's live lease: nothing is claimable.
    assert.deepEqual(await claimBatch(prisma, { token: randomUUID(), limit: 10, leaseMs: 1_000 }), []);
    assert.deepEqual([...(await markPublished(prisma, b, [{ id: y1.id, result: null }]))], [y1.id]);

    const [r1, r2, r3] = await outboxRows(prisma, { topic });
    assert.deepEqual(
      [r1?.status, r1?.claimToken, r1?.claimedUntil, r1?.result, r1?.takeovers, r1?.publishedAt !== null],
      ['published', null, null, { from: 'c' }, 1, true],
    );
    assert.deepEqual(
      [r2?.status, r2?.claimToken, r2?.attempts, r2?.lastErrorType, r2?.takeovers],
      ['pending', null, 1, 'UpstreamUnavailable', 1],
    );
    assert.deepEqual([r3?.status, r3?.claimToken, r3?.takeovers], ['published', null, 0]);
  });

  // claimBatch locks its candidates with FOR UPDATE SKIP LOCKED, and its snapshot still calls an
  // earlier event claimable while a concurrent write (a stale owner's markFailed or release, run
  // after its lease expired) holds that event's row: the claim must not take the later one.
  it('order: an event is not claimed while an earlier event of its aggregate is row-locked by a stale owner', async (t) => {
    const { prisma, url } = await freshDatabase(t);
    const topic = `order-lock.${uid()}`;
    const [p, e] = await insertEvents(prisma, {
      aggregates: [`order-lock-${uid()}`],
      perAggregate: 2,
      topic,
    });
    assert.ok(p && e);
    const stale = randomUUID();
    await claimBatch(prisma, { token: stale, limit: 10, leaseMs: 60_000 });
    await prisma.$executeRaw`
      UPDATE outbox_event SET claimed_until = now() - interval '1 second' WHERE claim_token = ${stale}::uuid`;

    // The stale owner's markFailed of p, caught while it holds p's row lock.
    const owner = await session(t, url);
    await owner.query('BEGIN');
    await owner.query(
      `UPDATE outbox_event SET attempts = attempts + 1, available_at = now() + interval '1 hour',
              last_error_type = 'UpstreamUnavailable', claim_token = NULL, claimed_until = NULL
        WHERE id = $1 AND claim_token = $2 AND status = 'pending'`,
      [p.id, stale],
    );
    const claimed = await claimBatch(prisma, { token: randomUUID(), limit: 10, leaseMs: 60_000 });
    await owner.query('COMMIT');

    const rows = await outboxRows(prisma, { topic });
    assert.deepEqual(
      claimed.map((c) => c.id),
      [],
      `claimed ${e.id} (2nd of its aggregate) while ${p.id} (1st) is now ` +
        JSON.stringify(rows.map((r) => ({ id: r.id, attempts: r.attempts, availableAt: r.availableAt }))),
    );
  });

  it("order: an aggregate's failing event holds back only that aggregate, and order holds once it heals", async (t) => {
    const { prisma } = await freshDatabase(t);
    const topic = `poison.${uid()}`;
    const [P, Q] = [`poison-p-${uid()}`, `poison-q-${uid()}`];
    const events = await insertEvents(prisma, { aggregates: [P, Q], perAggregate: 5, topic });
    const [p1, ...pRest] = events.filter((e) => e.aggregateId === P);
    assert.ok(p1);
    partner.faults.add({ route: 'events', aggregateId: P, kind: 'status', status: 503, times: 100_000 });
    const publisher = testPublisher(
      prisma,
      { webhook: webhook() },
      { maxAttempts: 1_000, backoff: { initialMs: 20, coefficient: 2, maximumMs: 200 } },
    );
    publisher.start();
    try {
      await waitFor(
        async () =>
          partner.events.list({ aggregateId: Q }).length === 5 &&
          ((await outboxRows(prisma, { id: p1.id }))[0]?.attempts ?? 0) >= 3,
        "Q's events applied and P's first event failed three times",
      );
      const rows = await outboxRows(prisma, { topic });
      const p1Row = rows.find((r) => r.id === p1.id);
      assert.equal(p1Row?.status, 'pending');
      assert.ok((p1Row?.attempts ?? 0) >= 3);
      assert.equal(p1Row?.lastErrorType, 'UpstreamUnavailable');
      for (const e of pRest) {
        const row = rows.find((r) => r.id === e.id);
        assert.deepEqual([row?.status, row?.attempts], ['pending', 0], `P's later event ${e.id} untouched`);
      }
      // Q went through meanwhile, in order; of P only its first event ever reached the partner.
      assert.deepEqual(
        rows.filter((r) => r.aggregateId === Q).map((r) => r.status),
        Array(5).fill('published'),
      );
      const whileFailing = orderPerAggregate(partner.events.list({ topic }), events);
      assert.deepEqual(Object.keys(whileFailing.applied), [Q]);
      assert.deepEqual(whileFailing.applied[Q], whileFailing.inserted[Q]);
      const sentOfP = new Set(
        partner.ledger.entries({ path: '/events', aggregateId: P }).map((l) => l.idempotencyKey),
      );
      assert.deepEqual([...sentOfP], [p1.id]);

      partner.faults.clear();
      await waitFor(
        async () => (await prisma.outboxEvent.count({ where: { topic, status: 'published' } })) === 10,
        'all published after the fault cleared',
      );
    } finally {
      partner.faults.clear();
      await publisher.stop(1_000);
    }
    const applied = partner.events.list({ topic });
    const order = orderPerAggregate(applied, events);
    assert.deepEqual(order.applied, order.inserted);
    assert.equal(applied.length, 10);
    assert.equal(partner.events.duplicates({ topic }), 0);
    // Each failed attempt was one delivery the partner turned away, then one applied it.
    const p1Final = (await outboxRows(prisma, { id: p1.id }))[0];
    assert.equal(applied.find((e) => e.id === p1.id)?.deliveries, (p1Final?.attempts ?? 0) + 1);
    assert.equal(publisher.stats.failed, p1Final?.attempts);
    assert.equal(publisher.stats.published, 10);
  });

  it('three publishers with their own connection pools share 2,000 events without loss or reordering', async (t) => {
    const fresh = await freshDatabase(t);
    const topic = `scale.${uid()}`;
    const run = uid();
    const aggregates = Array.from({ length: 100 }, (_, i) => `scale-${run}-${i}`);
    const events = await insertEvents(fresh.prisma, { aggregates, perAggregate: 20, topic });
    assert.equal(events.length, 2_000);
    // One PrismaClient per simulated publisher process.
    const clients = [0, 1, 2].map(() => createPrisma(fresh.url, { max: 3 }));
    const publishers = clients.map((client) => testPublisher(client, { webhook: webhook() }));
    try {
      // Connect all three first, so that none starts with a head start of its pool warming up.
      await Promise.all(clients.map((client) => client.$queryRaw`SELECT 1`));
      for (const p of publishers) p.start();
      await waitFor(
        async () =>
          (await fresh.prisma.outboxEvent.count({ where: { topic, status: 'published' } })) === 2_000,
        'all 2,000 published',
        50_000,
      );
    } finally {
      await stopAll(publishers);
      await Promise.all(clients.map((client) => client.$disconnect()));
    }

    const statuses = await fresh.prisma.outboxEvent.groupBy({ by: ['status'], _count: true });
    assert.deepEqual(
      statuses.map((s) => [s.status, s._count]),
      [['published', 2_000]],
    );
    const applied = partner.events.list({ topic });
    assert.equal(new Set(applied.map((e) => e.id)).size, 2_000);
    assert.equal(applied.length, 2_000);
    const order = orderPerAggregate(applied, events);
    assert.deepEqual(order.applied, order.inserted);
    const duplicates = partner.events.duplicates({ topic });
    const takeovers = await takeoversOf(fresh.prisma, topic);
    const shares = publishers.map((p) => p.stats.published);
    t.diagnostic(`duplicates at the partner ${duplicates}, takeovers ${takeovers}`);
    t.diagnostic(
      `published per publisher ${shares.join(' / ')}; stats ${JSON.stringify(publishers.map((p) => p.stats))}`,
    );
    assert.ok(duplicates <= takeovers, `${duplicates} duplicates but only ${takeovers} takeovers`);
    // Marks count each event once: the publishers' published counts add up to the table's.
    assert.equal(
      shares.reduce((a, b) => a + b, 0),
      2_000,
    );
    assert.ok(
      shares.every((n) => n > 0),
      `every publisher did some of the work: ${shares.join(' / ')}`,
    );
  });

  it('a database connection killed mid-batch and during the marks: the publisher recovers, nothing is lost', async (t) => {
    const fresh = await freshDatabase(t);
    const topic = `dbkill.${uid()}`;
    const run = uid();
    const aggregates = Array.from({ length: 8 }, (_, i) => `dbkill-${run}-${i}`);
    const events = await insertEvents(fresh.prisma, { aggregates, perAggregate: 5, topic });
    // Each aggregate's first delivery hangs 3 s: the batch (all 40 events) is in flight for a while.
    for (const aggregateId of aggregates) {
      partner.faults.add({ route: 'events', aggregateId, kind: 'delay', delayMs: 3_000, times: 1 });
    }
    // The test's own session: it observes, locks and kills; it is never killed itself.
    const admin = await session(t, fresh.url);
    const count = async (sql: string, params: unknown[] = []) =>
      Number((await admin.query<{ n: string }>(sql, params)).rows[0]?.n);
    const killOthers = () =>
      admin.query(
        `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );

    const client = createPrisma(fresh.url, { max: 4 });
    const publisher = testPublisher(client, { webhook: webhook() });
    publisher.start();
    try {
      await waitFor(
        async () =>
          (await count(
            'SELECT count(*) AS n FROM outbox_event WHERE topic = $1 AND claim_token IS NOT NULL',
            [topic],
          )) === 40,
        'the batch claimed',
      );
      // 1: while the deliveries are in flight (the publisher's connections sit idle in its pool).
      await killOthers();
      // 2: while the marks run. The test holds the batch's rows, so the publisher's markPublished
      // waits on their locks once the deliveries are done; then its connection is killed, which
      // fails the mark for sure (an error the publisher must count and retry).
      await admin.query('BEGIN');
      await admin.query('SELECT id FROM outbox_event WHERE topic = $1 FOR UPDATE', [topic]);
      await waitFor(async () => {
        // Inside a transaction pg_stat_activity is a snapshot taken at its first read: drop it.
        await admin.query('SELECT pg_stat_clear_snapshot()');
        return (
          (await count(
            `SELECT count(*) AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'
                AND query LIKE '%SET status = ''published''%'`,
          )) >= 1
        );
      }, 'the mark waiting on the row locks');
      await killOthers();
      await admin.query('ROLLBACK');
      await waitFor(
        async () =>
          (await count(`SELECT count(*) AS n FROM outbox_event WHERE topic = $1 AND status = 'published'`, [
            topic,
          ])) === 40,
        'all published after the kills',
      );
    } finally {
      await admin.query('ROLLBACK').catch(() => undefined);
      await publisher.stop(1_000);
      await client.$disconnect();
    }

    const applied = partner.events.list({ topic });
    assert.equal(new Set(applied.map((e) => e.id)).size, 40, 'every event applied, none lost');
    const order = orderPerAggregate(applied, events);
    assert.deepEqual(order.applied, order.inserted);
    const { rows } = await admin.query<{ status: string; n: string; takeovers: string; attempts: string }>(
      `SELECT status::text, count(*) AS n, sum(takeovers) AS takeovers, sum(attempts) AS attempts
         FROM outbox_event WHERE topic = $1 GROUP BY status`,
      [topic],
    );
    assert.deepEqual(
      rows.map((r) => [r.status, Number(r.n)]),
      [['published', 40]],
    );
    const duplicates = partner.events.duplicates({ topic });
    t.diagnostic(
      `databaseErrors ${publisher.stats.databaseErrors}, duplicates ${duplicates}, takeovers ${rows[0]?.takeovers}, stats ${JSON.stringify(publisher.stats)}`,
    );
    assert.ok(duplicates <= Number(rows[0]?.takeovers), 'a duplicate only after a takeover');
    // The killed markPublished was an error the publisher saw and retried.
    assert.ok(publisher.stats.databaseErrors >= 1, JSON.stringify(publisher.stats));
  });

  it('a claim whose answer is lost (committed, the connection cut before the reply): its events are given back, not held for a lease', async (t) => {
    const fresh = await freshDatabase(t);
    const topic = `lostclaim.${uid()}`;
    const aggregates = Array.from({ length: 4 }, (_, i) => `lostclaim-${uid()}-${i}`);
    await insertEvents(fresh.prisma, { aggregates, perAggregate: 3, topic });
    const { hostname, port } = new URL(fresh.url);
    const proxy = await startPgProxy({ host: hostname, port: Number(port) });
    t.after(() => proxy.close());
    const lost = proxy.atEndOf(/df_outbox_claim/, 'after', () => Promise.resolve());
    const client = createPrisma(proxy.via(fresh.url), { max: 2 });
    const publisher = testPublisher(client, { webhook: webhook() }, { leaseMs: 5_000 });
    publisher.start();
    try {
      await lost;
      await waitFor(
        async () => (await fresh.prisma.outboxEvent.count({ where: { topic, status: 'published' } })) === 12,
        'all published',
      );
    } finally {
      await publisher.stop(1_000);
      await client.$disconnect();
    }
    // Without the give-back, the lost claim's events wait out its lease and are taken over then.
    assert.equal(await takeoversOf(fresh.prisma, topic), 0, 'no event waited out the lost claim');
    assert.equal(new Set(partner.events.list({ topic }).map((e) => e.id)).size, 12);
    assert.equal(partner.events.duplicates({ topic }), 0);
    assert.ok(publisher.stats.databaseErrors >= 1, JSON.stringify(publisher.stats));
  });

  it('retries: 422 is dead at once, 503 until maxAttempts, no route is dead; a dead event holds back its aggregate until requeued', async (t) => {
    const { prisma } = await freshDatabase(t);
    const run = uid();
    const topic = `retry-${run}.event`;
    const unroutedTopic = `unrouted-${run}.event`;
    const [A, U, N, C] = ['invalid', 'unavailable', 'noroute', 'canary'].map((k) => `${k}-${run}`) as [
      string,
      string,
      string,
      string,
    ];
    const [a1, a2] = await insertEvents(prisma, { aggregates: [A], perAggregate: 2, topic });
    const [u1] = await insertEvents(prisma, { aggregates: [U], perAggregate: 1, topic });
    const [n1] = await insertEvents(prisma, { aggregates: [N], perAggregate: 1, topic: unroutedTopic });
    assert.ok(a1 && a2 && u1 && n1);
    partner.faults.add({ route: 'events', aggregateId: A, kind: 'status', status: 422, times: 1 });
    partner.faults.add({ route: 'events', aggregateId: U, kind: 'status', status: 503, times: 100_000 });
    const publisher = testPublisher(
      prisma,
      { webhook: webhook() },
      {
        maxAttempts: 3,
        backoff: { initialMs: 20, coefficient: 2, maximumMs: 100 },
        routes: [{ pattern: `retry-${run}.*`, sink: 'webhook' }],
      },
    );
    const row = async (id: string) => (await outboxRows(prisma, { id }))[0];
    publisher.start();
    try {
      await waitFor(
        async () => (await prisma.outboxEvent.count({ where: { status: 'dead' } })) === 3,
        'three dead events',
      );
      const [ra1, ru1, rn1] = [await row(a1.id), await row(u1.id), await row(n1.id)];
      assert.deepEqual([ra1?.status, ra1?.attempts, ra1?.lastErrorType], ['dead', 1, 'InvalidInput']);
      assert.match(ra1?.lastError ?? '', /422/);
      assert.deepEqual([ru1?.status, ru1?.attempts, ru1?.lastErrorType], ['dead', 3, 'UpstreamUnavailable']);
      assert.deepEqual([rn1?.status, rn1?.attempts, rn1?.lastErrorType], ['dead', 1, 'InvalidInput']);
      assert.match(rn1?.lastError ?? '', /no sink/);
      // u1: two failures scheduled for a retry, the third made it dead; a1 and n1 died at once.
      assert.deepEqual([publisher.stats.failed, publisher.stats.dead], [2, 3]);
      assert.deepEqual(
        (await listDead(prisma, { topic })).map((d) => [d.id, d.attempts, d.lastErrorType]),
        [
          [a1.id, 1, 'InvalidInput'],
          [u1.id, 3, 'UpstreamUnavailable'],
        ],
      );

      // A canary inserted after a2 is claimed in seq order, so once it is published the publisher
      // has looked past a2: a2 stays pending and undelivered behind its dead predecessor.
      const [canary] = await insertEvents(prisma, { aggregates: [C], perAggregate: 1, topic });
      assert.ok(canary);
      await waitFor(async () => (await row(canary.id))?.status === 'published', 'the canary published');
      const ra2 = await row(a2.id);
      assert.deepEqual([ra2?.status, ra2?.attempts, ra2?.claimToken], ['pending', 0, null]);
      assert.equal(partner.ledger.entries({ path: '/events', aggregateId: A }).length, 1, 'only a1 was sent');
      assert.deepEqual(partner.events.list({ aggregateId: A }), []);

      partner.faults.clear();
      const requeued = await requeueDead(prisma, { topic });
      assert.deepEqual(requeued.sort(), [a1.id, u1.id].sort());
      await waitFor(
        async () => (await prisma.outboxEvent.count({ where: { topic, status: 'published' } })) === 4,
        'the requeued events and a2 published',
      );
    } finally {
      partner.faults.clear();
      await publisher.stop(1_000);
    }
    const order = orderPerAggregate(partner.events.list({ topic }), [a1, a2, u1]);
    assert.deepEqual(order.applied[A], order.inserted[A]);
    // Deliveries the partner saw: every failed attempt plus the one that applied the event.
    assert.equal(partner.events.list({ aggregateId: U })[0]?.deliveries, 4);
    assert.equal(partner.events.list({ aggregateId: A })[0]?.deliveries, 2);
    assert.equal(partner.events.duplicates({ topic }), 0);
    const [fa1, fu1, fn1] = [await row(a1.id), await row(u1.id), await row(n1.id)];
    assert.deepEqual([fa1?.status, fa1?.attempts], ['published', 0]);
    assert.deepEqual([fu1?.status, fu1?.attempts], ['published', 0]);
    // The unrouted topic was not requeued and stays dead.
    assert.equal(fn1?.status, 'dead');
    assert.deepEqual(await requeueDead(prisma, { ids: [a1.id, a2.id] }), [], 'only dead events are requeued');
  });

  it("nats: a re-delivery after a takeover is dropped by the stream's duplicate window", async (t) => {
    const { prisma } = await freshDatabase(t);
    const run = uid();
    const { stream, subjectPrefix, jsm } = await testNatsStream(t, 'OUTBOX');
    const topic = `natstest.event`;
    const events = await insertEvents(prisma, {
      aggregates: [`nats-a-${run}`, `nats-b-${run}`],
      perAggregate: 5,
      topic,
    });
    const sink = createNatsSink({
      servers: 'nats://127.0.0.1:4222',
      stream,
      subjectPrefix,
      duplicateWindowMs: 120_000,
      timeoutMs: 5_000,
    });
    openSinks.push(sink);
    const publish = async () => {
      const publisher = testPublisher(prisma, { nats: sink }, { routes: [{ pattern: '*', sink: 'nats' }] });
      publisher.start();
      try {
        await waitFor(
          async () => (await prisma.outboxEvent.count({ where: { topic, status: 'published' } })) === 10,
          'all published to JetStream',
        );
      } finally {
        await publisher.stop(1_000);
      }
      return publisher;
    };
    type Ack = { stream: string; streamSeq: number; duplicate: boolean };

    await publish();
    const first = await outboxRows(prisma, { topic });
    const firstAcks = first.map((r) => r.result as Ack);
    assert.deepEqual(
      firstAcks.map((a) => [a.stream, a.duplicate]),
      Array(10).fill([stream, false]),
    );
    // The stream stored them in outbox order (one publisher, one aggregate's events one at a time).
    for (const aggregateId of new Set(events.map((e) => e.aggregateId))) {
      const seqs = first.filter((r) => r.aggregateId === aggregateId).map((r) => (r.result as Ack).streamSeq);
      assert.deepEqual(
        seqs,
        [...seqs].sort((a, b) => a - b),
      );
    }
    assert.equal((await jsm.streams.info(stream)).state.messages, 10);

    // As if the publisher had died between the acks and its mark: claims still on the rows, expired.
    await prisma.$executeRaw`
      UPDATE outbox_event
         SET status = 'pending', published_at = NULL, result = NULL,
             claim_token = ${randomUUID()}::uuid, claimed_until = now() - interval '1 second'
       WHERE topic = ${topic}`;
    const second = await publish();
    const again = await outboxRows(prisma, { topic });
    assert.deepEqual(
      again.map((r) => [r.takeovers, (r.result as Ack).duplicate, (r.result as Ack).streamSeq]),
      firstAcks.map((a) => [1, true, a.streamSeq]),
    );
    assert.equal(second.stats.published, 10);
    assert.equal((await jsm.streams.info(stream)).state.messages, 10, 'no message stored twice');
  });

  it('graceful stop: stop(100) aborts a slow delivery and releases its event, which a new publisher delivers', async (t) => {
    const { prisma } = await freshDatabase(t);
    const topic = `stop.${uid()}`;
    const [slow] = await insertEvents(prisma, { aggregates: [`stop-${uid()}`], perAggregate: 1, topic });
    assert.ok(slow);
    const fault = partner.faults.add({
      route: 'events',
      eventId: slow.id,
      kind: 'delay',
      delayMs: 4_000,
      times: 1,
    });
    const first = testPublisher(prisma, { webhook: webhook() });
    first.start();
    try {
      // The partner took the fault: the delivery is hanging there now.
      await waitFor(() => !partner.faults.list().some((f) => f.id === fault), 'the slow delivery under way');
      assert.notEqual((await outboxRows(prisma, { id: slow.id }))[0]?.claimToken, null);
    } finally {
      await first.stop(100);
    }
    const released = (await outboxRows(prisma, { id: slow.id }))[0];
    assert.deepEqual(
      [
        released?.status,
        released?.claimToken,
        released?.claimedUntil,
        released?.attempts,
        released?.takeovers,
      ],
      ['pending', null, null, 0, 0],
    );
    assert.deepEqual([first.stats.released, first.stats.published, first.stats.failed], [1, 0, 0]);

    const second = testPublisher(prisma, { webhook: webhook() });
    second.start();
    try {
      await waitFor(
        async () => (await outboxRows(prisma, { id: slow.id }))[0]?.status === 'published',
        'the released event published by the next publisher',
      );
    } finally {
      await second.stop(1_000);
    }
    const published = (await outboxRows(prisma, { id: slow.id }))[0];
    // The second publisher's delivery applied it (the aborted one is still waiting at the partner).
    assert.deepEqual(
      [published?.result, published?.attempts, published?.takeovers],
      [{ duplicate: false }, 0, 0],
    );
    assert.equal(second.stats.published, 1);
    assert.deepEqual(
      partner.events.list({ topic }).map((e) => e.id),
      [slow.id],
    );

    // Nothing in flight: stop resolves at once instead of waiting for the (long) grace time.
    const idle = testPublisher(prisma, { webhook: webhook() });
    idle.start();
    const timeout = new AbortController();
    const outcome = await Promise.race([
      idle.stop(60_000).then(() => 'stopped'),
      sleep(10_000, 'still waiting', { signal: timeout.signal }),
    ]);
    timeout.abort();
    assert.equal(outcome, 'stopped');
    assert.equal(idle.stats.batches, 0);
  });

  it('a delivery slower than the lease is cut off as a Timeout and retried, never taken over mid-flight', async (t) => {
    const { prisma } = await freshDatabase(t);
    const topic = `slow.${uid()}`;
    const [slow] = await insertEvents(prisma, { aggregates: [`slow-${uid()}`], perAggregate: 1, topic });
    // The partner holds the delivery 6 s; the lease is 2 s, so the publisher must give up at 1.8 s.
    partner.faults.add({ route: 'events', eventId: slow!.id, kind: 'delay', delayMs: 6_000 });
    const publisher = testPublisher(prisma, { webhook: webhook() }, { leaseMs: 2_000 });
    assert.equal(await publisher.runOnce(), 1);
    const [row] = await outboxRows(prisma, { id: slow!.id });
    assert.deepEqual(
      [row?.status, row?.attempts, row?.lastErrorType, row?.claimToken, row?.takeovers],
      ['pending', 1, 'Timeout', null, 0],
    );
    assert.equal(publisher.stats.lostClaims, 0);
  });

  it('webhook: a 409 (same key still in flight at the receiver) is retried, not dead', async (t) => {
    const { prisma } = await freshDatabase(t);
    const topic = `conflict.${uid()}`;
    const [event] = await insertEvents(prisma, { aggregates: [`conflict-${uid()}`], perAggregate: 1, topic });
    partner.faults.add({ route: 'events', eventId: event!.id, kind: 'status', status: 409 });
    const publisher = testPublisher(prisma, { webhook: webhook() });
    await publisher.runOnce();
    const [failed] = await outboxRows(prisma, { id: event!.id });
    assert.deepEqual(
      [failed?.status, failed?.attempts, failed?.lastErrorType],
      ['pending', 1, 'UpstreamUnavailable'],
    );
    publisher.start();
    try {
      await waitFor(
        async () => (await outboxRows(prisma, { id: event!.id }))[0]?.status === 'published',
        'published',
      );
    } finally {
      await publisher.stop(1_000);
    }
    assert.deepEqual(
      partner.events.list({ topic }).map((e) => e.id),
      [event!.id],
    );
  });

  it('nats: after its stream is deleted, the sink fails one delivery (retryable), then re-creates the stream and delivers', async (t) => {
    const { stream, subjectPrefix, jsm } = await testNatsStream(t, 'RECREATE');
    const sink = createNatsSink({
      servers: 'nats://127.0.0.1:4222',
      stream,
      subjectPrefix,
      duplicateWindowMs: 60_000,
      timeoutMs: 2_000,
    });
    openSinks.push(sink);
    const message = (n: number) => ({
      id: randomUUID(),
      seq: String(n),
      topic: 'recreate.event',
      aggregateType: 'test',
      aggregateId: 'a',
      payload: { n },
      createdAt: new Date(),
    });
    const signal = new AbortController().signal;
    await sink.publish(message(1), signal);
    await jsm.streams.delete(stream);
    const lost = await sink.publish(message(2), signal).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(lost instanceof ApplicationFailure, String(lost));
    assert.equal(lost.type, 'UpstreamUnavailable');
    assert.equal(lost.nonRetryable, false);
    const receipt = (await sink.publish(message(3), signal)) as { stream: string; duplicate: boolean };
    assert.deepEqual([receipt.stream, receipt.duplicate], [stream, false]);
    assert.equal((await jsm.streams.info(stream)).state.messages, 1);
  });
});
