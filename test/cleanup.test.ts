// Expiry of idempotency records and staged pages on real PostgreSQL: what a pass
// deletes, how it is bounded, that concurrent passes neither block nor double-count, the periodic
// runner in workers, and the `durable-fetch cleanup` command.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { CALL_COUNT_RETENTION_MS, deleteExpired, startPeriodicCleanup } from '../activities/cleanup.ts';
import { buildProgram } from '../cli/main.ts';
import { createPrisma } from '../db/client.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { temporalAddress } from './helpers/temporal.ts';
import { engineConnection } from '../db/pool-config.ts';

const HOUR = 3_600_000;
let db: TestDatabase;

before(async () => {
  db = await useTestDatabase();
});
after(async () => db?.drop());
beforeEach(async () => {
  await db.prisma.idempotencyRecord.deleteMany();
  await db.prisma.fetchedPage.deleteMany();
});

/** Inserts `n` rows into both tables, expiring `offsetMs` from now (+1 ms per row, in key order). */
async function insert(prefix: string, n: number, offsetMs: number): Promise<void> {
  const at = (i: number) => new Date(Date.now() + offsetMs + i);
  await db.prisma.idempotencyRecord.createMany({
    data: Array.from({ length: n }, (_, i) => ({
      key: `${prefix}-${i}`,
      fingerprint: 'f',
      result: {},
      expiresAt: at(i),
    })),
  });
  await db.prisma.fetchedPage.createMany({
    data: Array.from({ length: n }, (_, i) => ({
      key: `${prefix}-${i}`,
      recordCount: 0,
      records: [],
      updatedAt: new Date(),
      expiresAt: at(i),
    })),
  });
}

async function keys(): Promise<{ records: string[]; pages: string[] }> {
  const order = { key: 'asc' } as const;
  const select = { key: true } as const;
  return {
    records: (await db.prisma.idempotencyRecord.findMany({ select, orderBy: order })).map((r) => r.key),
    pages: (await db.prisma.fetchedPage.findMany({ select, orderBy: order })).map((r) => r.key),
  };
}

describe('deleteExpired', () => {
  it('cleanup: expired rows of both tables are deleted and unexpired ones kept', async () => {
    await insert('old', 3, -HOUR);
    await insert('new', 2, HOUR);
    assert.deepEqual(await deleteExpired(db.prisma), {
      idempotencyRecords: 3,
      stagedPages: 3,
      publishedEvents: 0,
      callCounts: 0,
    });
    assert.deepEqual(await keys(), { records: ['new-0', 'new-1'], pages: ['new-0', 'new-1'] });
    // Repeating the pass is harmless and reports nothing.
    assert.deepEqual(await deleteExpired(db.prisma), {
      idempotencyRecords: 0,
      stagedPages: 0,
      publishedEvents: 0,
      callCounts: 0,
    });
  });

  it('cleanup: an explicit `now` is the cut-off instead of the database clock', async () => {
    await insert('soon', 2, HOUR);
    await insert('later', 1, 3 * HOUR);
    const now = new Date(Date.now() + 2 * HOUR);
    assert.deepEqual(await deleteExpired(db.prisma, { now }), {
      idempotencyRecords: 2,
      stagedPages: 2,
      publishedEvents: 0,
      callCounts: 0,
    });
    assert.deepEqual(await keys(), { records: ['later-0'], pages: ['later-0'] });
  });

  it('cleanup: a pass with batchSize 2 and maxBatches 2 deletes at most 4 per table, oldest first; the next pass the rest', async () => {
    await insert('old', 5, -HOUR);
    await insert('new', 1, HOUR);
    const first = await deleteExpired(db.prisma, { batchSize: 2, maxBatches: 2 });
    assert.deepEqual(first, { idempotencyRecords: 4, stagedPages: 4, publishedEvents: 0, callCounts: 0 });
    assert.deepEqual(await keys(), { records: ['new-0', 'old-4'], pages: ['new-0', 'old-4'] });
    const second = await deleteExpired(db.prisma, { batchSize: 2, maxBatches: 2 });
    assert.deepEqual(second, { idempotencyRecords: 1, stagedPages: 1, publishedEvents: 0, callCounts: 0 });
    assert.deepEqual(await keys(), { records: ['new-0'], pages: ['new-0'] });
  });

  it('cleanup: two concurrent passes delete each expired row exactly once (their counts add up)', async () => {
    const expired = 300;
    await insert('old', expired, -HOUR);
    await insert('new', 3, HOUR);
    // A second client, as a second worker process would have: its own connection pool.
    const other = createPrisma(db.url, { max: 2 });
    try {
      const options = { batchSize: 7, maxBatches: 1_000 };
      const [a, b] = await Promise.all([deleteExpired(db.prisma, options), deleteExpired(other, options)]);
      assert.equal(a.idempotencyRecords + b.idempotencyRecords, expired, JSON.stringify({ a, b }));
      assert.equal(a.stagedPages + b.stagedPages, expired, JSON.stringify({ a, b }));
    } finally {
      await other.$disconnect();
    }
    assert.deepEqual(await keys(), {
      records: ['new-0', 'new-1', 'new-2'],
      pages: ['new-0', 'new-1', 'new-2'],
    });
  });

  it('cleanup: rows locked by another transaction are skipped without waiting and deleted by a later pass', async () => {
    await insert('old', 4, -HOUR);
    const holder = new pg.Client(engineConnection(db.url));
    await holder.connect();
    try {
      // Like a storePage transaction holding an idempotency record and a staged page.
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM idempotency_record WHERE key = 'old-0' FOR UPDATE");
      await holder.query("SELECT 1 FROM fetched_page WHERE key = 'old-1' FOR UPDATE");
      // A pass that waited for the locks would never finish while the transaction stays open.
      const deleted = await Promise.race([
        deleteExpired(db.prisma, { batchSize: 2 }),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('pass blocked on a lock')), 5_000),
        ),
      ]);
      assert.deepEqual(deleted, { idempotencyRecords: 3, stagedPages: 3, publishedEvents: 0, callCounts: 0 });
      assert.deepEqual(await keys(), { records: ['old-0'], pages: ['old-1'] });
      await holder.query('COMMIT');
    } finally {
      await holder.end();
    }
    assert.deepEqual(await deleteExpired(db.prisma), {
      idempotencyRecords: 1,
      stagedPages: 1,
      publishedEvents: 0,
      callCounts: 0,
    });
  });

  it('cleanup: batchSize and maxBatches must be positive integers', async () => {
    await assert.rejects(deleteExpired(db.prisma, { batchSize: 0 }), RangeError);
    await assert.rejects(deleteExpired(db.prisma, { maxBatches: 1.5 }), RangeError);
  });
});

type Db = Parameters<typeof startPeriodicCleanup>[0];

/** A pino logger whose lines land in `lines`. */
function captureLog() {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: 'debug' },
    {
      write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>),
    },
  );
  return { log, lines };
}

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('startPeriodicCleanup', () => {
  it('cleanup: the periodic runner deletes expired rows and logs the counts', async () => {
    await insert('old', 3, -HOUR);
    const { log, lines } = captureLog();
    const cleanup = startPeriodicCleanup(db.prisma, { intervalMs: 50, initialDelayMs: 0, log });
    try {
      await until(() => lines.some((l) => l.idempotencyRecords === 3 && l.stagedPages === 3), 'a pass');
    } finally {
      await cleanup.stop();
    }
    assert.deepEqual(await keys(), { records: [], pages: [] });
    assert.equal(lines.find((l) => l.idempotencyRecords === 3)?.level, 30, 'info when rows were deleted');
  });

  it('cleanup: stop() waits for the pass in progress and no pass starts after it', async () => {
    let calls = 0;
    let release: (n: number) => void = () => {};
    const fake = {
      $executeRaw: () => {
        calls++;
        return new Promise<number>((resolve) => (release = resolve));
      },
    } as unknown as Db;
    const cleanup = startPeriodicCleanup(fake, { intervalMs: 10, initialDelayMs: 0, log: captureLog().log });
    await until(() => calls === 1, 'the first batch');
    let stopped = false;
    const stopping = cleanup.stop().then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(stopped, false, 'stop() resolved while a batch was still running');
    release(0); // idempotency records done; the staged pages' batch follows
    await until(() => calls === 2, 'the second batch');
    release(0); // then the old partner call counts' statement
    await until(() => calls === 3, 'the call counts');
    release(0);
    await stopping;
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(calls, 3, 'no pass after stop()');
  });

  it('cleanup: a failing pass is logged as a warning and the next one still runs', async () => {
    let calls = 0;
    const fake = {
      $executeRaw: () => {
        calls++;
        return Promise.reject(new Error('database down'));
      },
    } as unknown as Db;
    const { log, lines } = captureLog();
    const cleanup = startPeriodicCleanup(fake, { intervalMs: 10, initialDelayMs: 0, log });
    try {
      await until(() => calls >= 2, 'a second pass');
    } finally {
      await cleanup.stop();
    }
    const warning = lines.find((l) => l.level === 40);
    assert.ok(warning, 'a warning was logged');
    assert.match(JSON.stringify(warning.err), /database down/);
  });

  it('cleanup: intervalMs 0 disables the periodic runner', async () => {
    let calls = 0;
    const fake = { $executeRaw: () => (calls++, Promise.resolve(0)) } as unknown as Db;
    const cleanup = startPeriodicCleanup(fake, { intervalMs: 0, initialDelayMs: 0, log: captureLog().log });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await cleanup.stop();
    assert.equal(calls, 0);
  });
});

describe('deleteExpired: partner call counts', () => {
  it('cleanup: per-second call counts older than twice the longest breaker window go, recent ones stay (R8)', async () => {
    const at = (ms: number) => new Date(Date.now() - ms);
    for (const [i, age] of [
      CALL_COUNT_RETENTION_MS + HOUR,
      CALL_COUNT_RETENTION_MS + 1_000,
      HOUR,
    ].entries()) {
      await db.prisma.downstreamCalls.create({ data: { downstream: 'ds', second: at(age), calls: i + 1 } });
    }
    assert.equal((await deleteExpired(db.prisma)).callCounts, 2);
    const left = await db.prisma.downstreamCalls.findMany();
    assert.deepEqual(
      left.map((r) => r.calls),
      [3],
    );
  });
});

describe('cli cleanup', () => {
  it('cleanup: `durable-fetch cleanup --json` prints the counts; a second run deletes nothing', async () => {
    await insert('old', 2, -HOUR);
    await insert('new', 1, HOUR);
    const env = { DATABASE_URL: db.url, TEMPORAL_ADDRESS: temporalAddress() };
    const first = await runCli(['cleanup', '--json'], env);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(JSON.parse(first.stdout), {
      idempotencyRecords: 2,
      stagedPages: 2,
      publishedEvents: 0,
      callCounts: 0,
    });
    assert.deepEqual(await keys(), { records: ['new-0'], pages: ['new-0'] });
    const second = await runCli(['cleanup'], env);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(
      second.stdout,
      'deleted 0 idempotency records, 0 staged pages, 0 published outbox events and 0 old partner call counts\n',
    );
  });

  it('cleanup: cleanup --help names --json and explains the retention as the dedupe window', () => {
    const program = buildProgram(() => assert.fail('rendering help must not open the CLI context'));
    const command = program.commands.find((c) => c.name() === 'cleanup') ?? assert.fail('no cleanup command');
    let help = '';
    command.configureOutput({ writeOut: (s) => (help += s) });
    command.outputHelp();
    assert.match(help, /^Usage: durable-fetch cleanup \[options\]/);
    assert.ok(help.includes('--json'));
    assert.match(help, /DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS/);
    assert.match(help, /dedupe window/);
    assert.match(help, /DURABLE_FETCH_CLEANUP_INTERVAL_MS/);
  });
});

describe('deleteExpired: published outbox events', () => {
  it('cleanup: with publishedEventRetentionMs only published events older than the retention go, in bounded batches', async () => {
    const ago = (ms: number) => new Date(Date.now() - ms);
    const event = (name: string, fields: { status: 'pending' | 'published' | 'dead'; at: Date }) => ({
      id: crypto.randomUUID(),
      topic: 'cleanup.retention',
      aggregateType: 'test',
      aggregateId: 'cleanup-retention',
      payload: { name },
      status: fields.status,
      createdAt: fields.at,
      availableAt: fields.at,
      ...(fields.status === 'published' ? { publishedAt: fields.at } : {}),
    });
    await db.prisma.outboxEvent.deleteMany();
    await db.prisma.outboxEvent.createMany({
      data: [
        // old-0 was published first.
        ...Array.from({ length: 5 }, (_, i) =>
          event(`old-${i}`, { status: 'published', at: ago(3 * HOUR - i * 60_000) }),
        ),
        event('recent', { status: 'published', at: ago(10 * 60_000) }),
        event('pending', { status: 'pending', at: ago(5 * HOUR) }),
        event('dead', { status: 'dead', at: ago(5 * HOUR) }),
      ],
    });
    const names = async () =>
      (await db.prisma.outboxEvent.findMany({ select: { payload: true } }))
        .map((e) => (e.payload as { name: string }).name)
        .sort();
    try {
      // Without the option published events are kept.
      assert.deepEqual(await deleteExpired(db.prisma), {
        idempotencyRecords: 0,
        stagedPages: 0,
        publishedEvents: 0,
        callCounts: 0,
      });
      const options = { publishedEventRetentionMs: HOUR, batchSize: 2, maxBatches: 2 };
      assert.deepEqual(await deleteExpired(db.prisma, options), {
        idempotencyRecords: 0,
        stagedPages: 0,
        publishedEvents: 4,
        callCounts: 0,
      });
      assert.deepEqual(await names(), ['dead', 'old-4', 'pending', 'recent'], 'the four oldest went first');
      assert.equal((await deleteExpired(db.prisma, options)).publishedEvents, 1);
      assert.deepEqual(await names(), ['dead', 'pending', 'recent']);
      assert.equal((await deleteExpired(db.prisma, options)).publishedEvents, 0);
      // The cut-off is `now` minus the retention: an hour later, the recent one is old enough too.
      const later = { ...options, now: new Date(Date.now() + HOUR) };
      assert.equal((await deleteExpired(db.prisma, later)).publishedEvents, 1);
      assert.deepEqual(await names(), ['dead', 'pending'], 'pending and dead events are never deleted');
    } finally {
      await db.prisma.outboxEvent.deleteMany();
    }
  });
});
