// The outbox publisher against real PostgreSQL and the demo partner's real webhook endpoint (R5, R1).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createHttpClient } from '../activities/http.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { createWebhookSink } from '../worker/outbox/webhook-sink.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { insertEvents, testPublisher, waitFor } from './helpers/outbox.ts';

let db: TestDatabase;
let partner: PartnerServer;

before(async () => {
  [db, partner] = await Promise.all([useTestDatabase(), startPartner({ port: 0 })]);
});
after(async () => {
  await partner?.close();
  await db?.drop();
});

const webhook = () =>
  createWebhookSink(
    createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 5_000 }),
    new URL(`${partner.url}/events`),
  );

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
});
