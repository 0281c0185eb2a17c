// How long-running processes size their database pools (worker/pool-size.ts): one connection for
// everything they run at once that may hold one, read from their settings, and the downstream
// pollers' slots as the database holds them at start (real PostgreSQL).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../runtime/config.ts';
import { DEFAULT_PUBLISHER_LOOPS } from '../worker/outbox/publisher.ts';
import {
  downstreamSlotsAt,
  poolSize,
  PUBLISHER_BACKGROUND,
  publisherPool,
  startPool,
  WORKER_BACKGROUND,
  workerPool,
} from '../worker/pool-size.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';

let db: TestDatabase;
before(async () => {
  db = await useTestDatabase();
});
after(async () => {
  await db?.drop();
});

describe('pool size', () => {
  it('pool-size: the sum of every kind of slot plus the background passes', () => {
    assert.equal(poolSize({ background: 2 }), 2);
    assert.equal(
      poolSize({
        activitySlots: 20,
        localActivitySlots: 5,
        downstreamSlots: 10,
        publisherLoops: 2,
        background: 4,
      }),
      41,
    );
  });

  it('pool-size: worker, publisher and npm start pools follow their settings', () => {
    const config = loadConfig({ DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: '7' });
    // The activity slots twice: as many local activities (the database steps) as regular ones.
    assert.deepEqual(workerPool(config, 10), { max: 7 + 7 + 10 + WORKER_BACKGROUND, bounded: true });
    assert.deepEqual(publisherPool(), { max: DEFAULT_PUBLISHER_LOOPS + PUBLISHER_BACKGROUND, bounded: true });
    assert.deepEqual(publisherPool(5), { max: 5 + PUBLISHER_BACKGROUND, bounded: true });
    // One process: one sampler and one cleanup pass, the worker's sweep and refresh, the
    // publisher's loops.
    assert.deepEqual(startPool(config, 10), {
      max: 7 + 7 + 10 + DEFAULT_PUBLISHER_LOOPS + WORKER_BACKGROUND,
      bounded: true,
    });
  });

  it("pool-size: the downstream slots are the database's downstreams' maxConcurrentCalls; 0 when it cannot be read", async () => {
    const config = loadConfig({ DATABASE_URL: db.url });
    assert.equal(await downstreamSlotsAt(config), 0);
    await db.prisma.downstream.createMany({
      data: [
        { id: 'pool-a', maxConcurrentCalls: 3 },
        { id: 'pool-b', maxConcurrentCalls: 12, isolated: true },
      ],
    });
    assert.equal(await downstreamSlotsAt(config), 15);
    const missing = new URL(db.url);
    missing.pathname = '/pool_size_no_such_database';
    assert.equal(await downstreamSlotsAt(config, missing.href), 0);
  });
});
