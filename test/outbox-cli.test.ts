// `durable-fetch outbox status|dead list|dead show|dead requeue` and `durable-fetch publisher` as
// users run them: child processes of bin/durable-fetch.js against a cloned database seeded with
// outbox rows in every state. Dead events are made by a real Publisher, so what `dead show` prints
// is the error as the publisher stored it (redacted).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { failure } from '../activities/errors.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import type { SinkName } from '../contract/outbox-routes.ts';
import type { Sink } from '../worker/outbox/sinks.ts';
import { lines, runCli, type CliResult } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { testPublisher } from './helpers/outbox.ts';

const ROUTES = 'fetch.*=webhook,audit.*=nats,temporal.start_workflow=temporal';
const HOUR = 3_600_000;
/** Credentials inside sink errors: the publisher must store (and the CLI show) them redacted. */
const NATS_PASSWORD = 's3cr3t-nats-pw';
const TEMPORAL_TOKEN = 'tok-9f8e7d';

let db: TestDatabase;
let env: Record<string, string>;

/** Ids of the seeded rows, by what they are. */
const ids = {
  oldest: randomUUID(),
  inFlight: randomUUID(),
  retrying: randomUUID(),
  deadFetch: randomUUID(),
  published: randomUUID(),
  runCompleted: randomUUID(),
  auditRetrying: randomUUID(),
  deadAudit: randomUUID(),
  deadStart: randomUUID(),
  orphan: randomUUID(),
};

/** A sink whose every delivery fails with `error` (permanent: the event goes dead at once). */
function failingSink(name: SinkName, error: Error): Sink {
  return { name, publish: () => Promise.reject(error), close: () => Promise.resolve() };
}

function row(
  id: string,
  topic: string,
  extra: Partial<Prisma.OutboxEventCreateManyInput> = {},
): Prisma.OutboxEventCreateManyInput {
  return {
    id,
    topic,
    aggregateType: 'cli-test',
    aggregateId: `agg-${id.slice(0, 8)}`,
    payload: { ref: id },
    ...extra,
  };
}

before(async () => {
  db = await useTestDatabase();
  env = { DATABASE_URL: db.url, DURABLE_FETCH_OUTBOX_ROUTES: ROUTES };

  // Two dead events, killed by a publisher whose sinks refuse them with credentials in the message.
  await db.prisma.outboxEvent.createMany({
    data: [
      row(ids.deadAudit, 'audit.export', { payload: { exportId: 'exp-1', rows: 12 } }),
      row(ids.deadStart, 'temporal.start_workflow', { payload: { workflowId: 'fetch/x/y' } }),
    ],
  });
  const publisher = testPublisher(
    db.prisma,
    {
      nats: failingSink(
        'nats',
        failure(
          'InvalidInput',
          'SUBJECT_REJECTED',
          `subject rejected by nats://publisher:${NATS_PASSWORD}@nats.internal:4222`,
        ),
      ),
      temporal: failingSink(
        'temporal',
        failure(
          'PermissionDenied',
          'HTTP_403',
          `start refused by https://ops:${TEMPORAL_TOKEN}@temporal.example.test (403)`,
        ),
      ),
    },
    {
      routes: [
        { pattern: 'audit.*', sink: 'nats' },
        { pattern: 'temporal.start_workflow', sink: 'temporal' },
      ],
      maxAttempts: 1,
    },
  );
  assert.equal(await publisher.runOnce(), 2);
  assert.equal(publisher.stats.dead, 2);

  // Everything else seeded as it stands: pending (one old), in flight, retrying, dead, published.
  const now = Date.now();
  await db.prisma.outboxEvent.createMany({
    data: [
      row(ids.oldest, 'fetch.page_stored', { createdAt: new Date(now - 2 * HOUR) }),
      row(ids.inFlight, 'fetch.page_stored', {
        claimToken: randomUUID(),
        claimedUntil: new Date(now + HOUR),
      }),
      row(ids.retrying, 'fetch.page_stored', {
        attempts: 2,
        availableAt: new Date(now + HOUR),
        lastErrorType: 'UpstreamUnavailable',
        lastError: 'webhook delivery: upstream unavailable (503)',
      }),
      row(ids.deadFetch, 'fetch.page_stored', {
        status: 'dead',
        attempts: 12,
        lastErrorType: 'UpstreamUnavailable',
        lastError: 'webhook delivery: upstream unavailable (503)',
      }),
      row(ids.published, 'fetch.page_stored', { status: 'published', publishedAt: new Date(now) }),
      row(ids.runCompleted, 'fetch.run_completed'),
      row(ids.auditRetrying, 'audit.export', { attempts: 1, availableAt: new Date(now + HOUR) }),
      row(ids.orphan, 'orphan.event'),
    ],
  });
});

after(async () => {
  await db?.drop();
});

/** Exit 0, nothing on stderr; returns stdout parsed as JSON. */
function json<T>(result: CliResult): T {
  assert.equal(result.code, 0, `stdout: ${result.stdout}\nstderr: ${result.stderr}`);
  assert.equal(result.stderr, '');
  return JSON.parse(result.stdout) as T;
}

/** A user error: exit 1, nothing on stdout, one line on stderr, no stack trace. */
function assertOneLineError(result: CliResult, pattern: RegExp): void {
  const detail = `stdout: ${result.stdout}\nstderr: ${result.stderr}`;
  assert.equal(result.code, 1, detail);
  assert.equal(result.stdout, '', detail);
  assert.equal(lines(result.stderr).length, 1, detail);
  assert.doesNotMatch(result.stderr, /^\s+at /m, detail);
  assert.match(result.stderr, pattern, detail);
}

interface Counts {
  pending: number;
  inFlight: number;
  retrying: number;
  dead: number;
  oldestPendingMs: number | null;
}
interface StatusJson extends Counts {
  sinks: (Counts & { sink: string })[];
  topics: (Counts & { topic: string; sink: string })[];
}

const counts = ({ pending, inFlight, retrying, dead }: Counts) => ({ pending, inFlight, retrying, dead });

/** `oldestPendingMs` is about two hours for the row created two hours ago (allowing a slow run). */
function assertAboutTwoHours(ms: number | null | undefined, what: string): void {
  assert.ok(typeof ms === 'number' && ms >= 2 * HOUR && ms < 2 * HOUR + 10 * 60_000, `${what}: ${ms}`);
}

interface DeadJson {
  id: string;
  seq: string;
  topic: string;
  aggregateType: string;
  aggregateId: string;
  attempts: number;
  lastErrorType: string | null;
  lastError: string | null;
  createdAt: string;
  failedAt: string;
  payload?: unknown;
}

describe('outbox cli: help', { concurrency: true }, () => {
  // An invalid DATABASE_URL would fail config validation: help must not get that far.
  const noConfig = { DATABASE_URL: 'mysql://nope' };

  it('outbox-cli: publisher --help exits 0 and explains routes, leases and stopping', async () => {
    const result = await runCli(['publisher', '--help'], noConfig);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.match(result.stdout, /^Usage: durable-fetch publisher \[options\]/);
    assert.match(result.stdout, /outbox publisher/);
    for (const text of ['DURABLE_FETCH_OUTBOX_ROUTES', 'DURABLE_FETCH_OUTBOX_LEASE_MS', 'SIGINT/SIGTERM']) {
      assert.ok(result.stdout.includes(text), `publisher --help mentions ${text}`);
    }
  });

  it('outbox-cli: outbox --help and outbox dead --help exit 0 and list their commands', async () => {
    const [outbox, dead] = await Promise.all([
      runCli(['outbox', '--help'], noConfig),
      runCli(['outbox', 'dead', '--help'], noConfig),
    ]);
    assert.equal(outbox.code, 0, outbox.stderr);
    assert.match(outbox.stdout, /^Usage: durable-fetch outbox \[options\] \[command\]/);
    assert.match(outbox.stdout, /^\s+status\b.*pending/m);
    assert.match(outbox.stdout, /^\s+dead\b.*dead events/m);
    assert.equal(dead.code, 0, dead.stderr);
    for (const command of ['list', 'show', 'requeue']) {
      assert.match(dead.stdout, new RegExp(`^\\s+${command}\\b`, 'm'), `outbox dead --help lists ${command}`);
    }
  });

  it('outbox-cli: the top-level help lists publisher and outbox', async () => {
    const result = await runCli(['--help'], noConfig);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^\s+publisher\b/m);
    assert.match(result.stdout, /^\s+outbox\b/m);
  });
});

describe('outbox cli: status and dead events', () => {
  it('outbox-cli: status --json counts pending, in-flight, retrying and dead per topic and per sink', async () => {
    const status = json<StatusJson>(await runCli(['outbox', 'status', '--json'], env));
    assert.deepEqual(counts(status), { pending: 6, inFlight: 1, retrying: 2, dead: 3 });
    assertAboutTwoHours(status.oldestPendingMs, 'oldest pending overall');

    assert.deepEqual(
      status.topics.map((t) => ({ topic: t.topic, sink: t.sink, ...counts(t) })),
      [
        { topic: 'audit.export', sink: 'nats', pending: 1, inFlight: 0, retrying: 1, dead: 1 },
        { topic: 'fetch.page_stored', sink: 'webhook', pending: 3, inFlight: 1, retrying: 1, dead: 1 },
        { topic: 'fetch.run_completed', sink: 'webhook', pending: 1, inFlight: 0, retrying: 0, dead: 0 },
        { topic: 'orphan.event', sink: 'none (no route)', pending: 1, inFlight: 0, retrying: 0, dead: 0 },
        { topic: 'temporal.start_workflow', sink: 'temporal', pending: 0, inFlight: 0, retrying: 0, dead: 1 },
      ],
    );
    const topic = (name: string) => status.topics.find((t) => t.topic === name);
    assertAboutTwoHours(topic('fetch.page_stored')?.oldestPendingMs, 'fetch.page_stored');
    assert.ok((topic('fetch.run_completed')?.oldestPendingMs ?? -1) < HOUR);
    assert.equal(topic('temporal.start_workflow')?.oldestPendingMs, null, 'nothing pending');

    const bySink = Object.fromEntries(status.sinks.map((s) => [s.sink, counts(s)]));
    assert.deepEqual(bySink, {
      nats: { pending: 1, inFlight: 0, retrying: 1, dead: 1 },
      webhook: { pending: 4, inFlight: 1, retrying: 1, dead: 1 },
      'none (no route)': { pending: 1, inFlight: 0, retrying: 0, dead: 0 },
      temporal: { pending: 0, inFlight: 0, retrying: 0, dead: 1 },
    });
    assertAboutTwoHours(status.sinks.find((s) => s.sink === 'webhook')?.oldestPendingMs, 'webhook');
  });

  it('outbox-cli: status prints the totals and one table row per topic with its sink', async () => {
    const result = await runCli(['outbox', 'status'], env);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    const [summary, header, ...rest] = lines(result.stdout);
    assert.match(summary ?? '', /^pending 6 \(oldest 2h 0\dm\), in flight 1, retrying 2, dead 3$/);
    assert.deepEqual(header?.split(/\s{2,}/), [
      'SINK',
      'TOPIC',
      'PENDING',
      'OLDEST PENDING',
      'IN FLIGHT',
      'RETRYING',
      'DEAD',
    ]);
    const rows = rest.filter((l) => !l.startsWith('dead events')).map((l) => l.split(/\s{2,}/));
    assert.deepEqual(
      rows.map(([sink, topic, pending, , inFlight, retrying, dead]) => [
        sink,
        topic,
        pending,
        inFlight,
        retrying,
        dead,
      ]),
      [
        ['nats', 'audit.export', '1', '0', '1', '1'],
        ['webhook', 'fetch.page_stored', '3', '1', '1', '1'],
        ['webhook', 'fetch.run_completed', '1', '0', '0', '0'],
        ['none (no route)', 'orphan.event', '1', '0', '0', '0'],
        ['temporal', 'temporal.start_workflow', '0', '0', '0', '1'],
      ],
    );
    assert.match(rows[1]?.[3] ?? '', /^2h 0\dm$/);
    assert.equal(rows[4]?.[3], '-');
    assert.match(
      result.stdout,
      /dead events hold back later events of their aggregate: see `outbox dead list`/,
    );
  });

  it('outbox-cli: dead list shows every dead event, oldest first, without payloads', async () => {
    const list = json<DeadJson[]>(await runCli(['outbox', 'dead', 'list', '--json'], env));
    assert.deepEqual(
      list.map((e) => e.id),
      [ids.deadAudit, ids.deadStart, ids.deadFetch],
    );
    for (const e of list) assert.equal('payload' in e, false, 'no payload in the list');
    const [audit, start, fetch] = list;
    assert.equal(audit?.topic, 'audit.export');
    assert.equal(audit?.attempts, 1);
    assert.equal(audit?.lastErrorType, 'InvalidInput');
    assert.equal(audit?.lastError, 'subject rejected by nats://publisher:***@nats.internal:4222');
    assert.equal(start?.lastErrorType, 'PermissionDenied');
    assert.equal(start?.lastError, 'start refused by https://ops:***@temporal.example.test (403)');
    assert.equal(fetch?.attempts, 12);
    assert.ok(!Number.isNaN(Date.parse(audit?.failedAt ?? '')));
    assert.doesNotMatch(JSON.stringify(list), new RegExp(`${NATS_PASSWORD}|${TEMPORAL_TOKEN}`));

    const audits = json<DeadJson[]>(
      await runCli(['outbox', 'dead', 'list', '--topic', 'audit.export', '--json'], env),
    );
    assert.deepEqual(
      audits.map((e) => e.id),
      [ids.deadAudit],
    );

    const human = await runCli(['outbox', 'dead', 'list'], env);
    assert.equal(human.code, 0, human.stderr);
    const [header, ...rows] = lines(human.stdout);
    assert.match(header ?? '', /^ID\s+TOPIC\s+AGGREGATE\s+ATTEMPTS\s+ERROR\s+FAILED AT$/);
    assert.deepEqual(
      rows.map((r) => r.split(/\s+/)[0]),
      [ids.deadAudit, ids.deadStart, ids.deadFetch],
    );
    assert.doesNotMatch(human.stdout, new RegExp(`${NATS_PASSWORD}|${TEMPORAL_TOKEN}`));
  });

  it('outbox-cli: dead show prints the redacted error, attempts and payload', async () => {
    const human = await runCli(['outbox', 'dead', 'show', ids.deadAudit], env);
    assert.equal(human.code, 0, human.stderr);
    assert.equal(human.stderr, '');
    const fields = new Map(
      lines(human.stdout).map((l) => {
        const [key = '', value = ''] = l.split(/\s{2,}(.*)/);
        return [key, value];
      }),
    );
    assert.equal(fields.get('id'), ids.deadAudit);
    assert.equal(fields.get('topic'), 'audit.export');
    assert.equal(fields.get('attempts'), '1');
    assert.equal(
      fields.get('error'),
      'InvalidInput: subject rejected by nats://publisher:***@nats.internal:4222',
    );
    assert.deepEqual(JSON.parse(fields.get('payload') ?? 'null'), { exportId: 'exp-1', rows: 12 });
    assert.doesNotMatch(human.stdout, new RegExp(NATS_PASSWORD));

    const shown = json<DeadJson>(await runCli(['outbox', 'dead', 'show', ids.deadStart, '--json'], env));
    assert.equal(shown.id, ids.deadStart);
    assert.equal(shown.lastError, 'start refused by https://ops:***@temporal.example.test (403)');
    assert.deepEqual(shown.payload, { workflowId: 'fetch/x/y' });
  });

  it('outbox-cli: dead show refuses an id that is not a UUID, or not a dead event, with exit 1', async () => {
    const [malformed, unknown, pending] = await Promise.all([
      runCli(['outbox', 'dead', 'show', 'not-a-uuid'], env),
      runCli(['outbox', 'dead', 'show', '00000000-0000-4000-8000-000000000000'], env),
      runCli(['outbox', 'dead', 'show', ids.oldest], env),
    ]);
    assertOneLineError(malformed, /^durable-fetch: 'not-a-uuid' is not an event id \(a UUID\)$/m);
    assertOneLineError(unknown, /^durable-fetch: no dead event '00000000-0000-4000-8000-000000000000'$/m);
    assertOneLineError(pending, new RegExp(`^durable-fetch: no dead event '${ids.oldest}'$`, 'm'));
  });

  it('outbox-cli: dead requeue without ids, --topic or --all, or with a bad id, exits 1 with one line', async () => {
    const [none, bad] = await Promise.all([
      runCli(['outbox', 'dead', 'requeue'], env),
      runCli(['outbox', 'dead', 'requeue', ids.deadFetch, 'nope'], env),
    ]);
    assertOneLineError(none, /^durable-fetch: name event ids, or pass --topic <topic> or --all$/m);
    assertOneLineError(bad, /^durable-fetch: 'nope' is not an event id \(a UUID\)$/m);
    // Nothing was requeued by either.
    assert.equal(
      (await db.prisma.outboxEvent.findUniqueOrThrow({ where: { id: ids.deadFetch } })).status,
      'dead',
    );
  });

  it('outbox-cli: dead requeue <id> makes the event pending with a fresh attempt budget', async () => {
    const result = await runCli(['outbox', 'dead', 'requeue', ids.deadFetch], env);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, 'requeued 1 dead event\n');
    const requeued = await db.prisma.outboxEvent.findUniqueOrThrow({ where: { id: ids.deadFetch } });
    assert.equal(requeued.status, 'pending');
    assert.equal(requeued.attempts, 0);
    assert.equal(requeued.claimToken, null);
    assert.ok(requeued.availableAt.getTime() <= Date.now() + 1_000, 'due at once');
    // The last error stays for the record until the next attempt.
    assert.equal(requeued.lastErrorType, 'UpstreamUnavailable');

    // Again: no longer dead, so left alone (and said so).
    const again = await runCli(['outbox', 'dead', 'requeue', ids.deadFetch, ids.oldest], env);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(
      again.stdout,
      `requeued 0 dead events\nnot dead (or unknown), left alone: ${ids.deadFetch}, ${ids.oldest}\n`,
    );

    // By topic, then all that is left; status agrees.
    const byTopic = json<{ requeued: string[] }>(
      await runCli(['outbox', 'dead', 'requeue', '--topic', 'audit.export', '--json'], env),
    );
    assert.deepEqual(byTopic, { requeued: [ids.deadAudit] });
    const all = json<{ requeued: string[] }>(
      await runCli(['outbox', 'dead', 'requeue', '--all', '--json'], env),
    );
    assert.deepEqual(all, { requeued: [ids.deadStart] });
    const status = json<StatusJson>(await runCli(['outbox', 'status', '--json'], env));
    // The requeued events are pending again; the retrying counts lose nobody that was not dead.
    assert.deepEqual(counts(status), { pending: 9, inFlight: 1, retrying: 2, dead: 0 });
    assert.deepEqual(json<DeadJson[]>(await runCli(['outbox', 'dead', 'list', '--json'], env)), []);
    const empty = await runCli(['outbox', 'dead', 'list'], env);
    assert.equal(empty.stdout, 'no dead events\n');
  });
});
