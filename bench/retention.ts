/**
 * `npm run bench`, retention (R12d "retention", R5): a soak of repeated rounds of one-page runs
 * on a real `durable-fetch worker` and `durable-fetch publisher` with retention shortened through
 * their own settings, so the bound shows within minutes — published outbox events kept 10 s
 * (`DURABLE_FETCH_OUTBOX_RETENTION_DAYS` = 10 s in days; it takes fractions), a cleanup pass
 * every 2 s in both processes (`DURABLE_FETCH_CLEANUP_INTERVAL_MS`). Idempotency records and
 * staged pages expire after `DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS`, whole days, at least 1:
 * the soak sets 1, and shows their expiry with the same pass run with a clock one day ahead.
 * Every table's rows and bytes before, at the soak's middle, at its end, once the outbox
 * retention has passed with no new runs, and after that expiry pass. Rows: each growing table's
 * size at the end against its size at the middle (≈ 1.0: bounded; ≈ 0.5: grows with the runs).
 * A round of runs starts every 15 s (10 s with `--quick`) or when the last one ends: full, 12
 * rounds of 200 runs (2,400 runs, about 3 minutes); `--quick`, 4 rounds of 25 (about 1 minute).
 *
 *   npx tsx bench/retention.ts [--quick]
 *   (BENCH_RETENTION_ROUNDS, BENCH_RETENTION_RUNS override the load)
 */
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { deleteExpired } from '../activities/cleanup.ts';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { testClient } from '../test/helpers/temporal.ts';
import { measurePhase, startRun } from './phases.ts';
import { peakRss } from './proc-stats.ts';
import { type BenchOptions, type BenchRow, type BenchSection, round } from './report.ts';
import {
  type BenchWorker,
  type ServiceProcess,
  startBenchPublisher,
  startBenchWorker,
} from './service-processes.ts';
import { standalone } from './standalone.ts';
import { mib, nonZero, tableSizes, type TableSizes } from './table-sizes.ts';
import { engineConnection } from '../db/pool-config.ts';

const RECORDS = 100;
const SOURCE = 'retention';
/** How long published events are kept during the soak. */
const OUTBOX_RETENTION_S = 10;
/** Time between cleanup passes of the worker and the publisher during the soak. */
const CLEANUP_INTERVAL_MS = 2_000;
/** The shortest idempotency retention the worker accepts (whole days). */
const IDEMPOTENCY_RETENTION_DAYS = 1;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** autovacuum's default naptime: how often the bench vacuums when the server's autovacuum is off. */
const VACUUM_PERIOD_MS = 60_000;

/**
 * Stands in for autovacuum when the server has it off (the shared CI server does): deleted rows
 * leave dead tuples whose space only (auto)vacuum makes reusable, so without it a table whose rows
 * are bounded grows on disk anyway. A plain VACUUM of the database every naptime, as autovacuum's
 * launcher would visit it; nothing when autovacuum is on. `stop()` waits for a VACUUM in progress.
 */
async function vacuumStandIn(databaseUrl: string, say: (line: string) => void) {
  const client = new pg.Client(engineConnection(databaseUrl));
  await client.connect();
  const { rows } = await client.query<{ setting: string }>(
    "SELECT setting FROM pg_settings WHERE name = 'autovacuum'",
  );
  const autovacuum = rows[0]?.setting === 'on';
  if (autovacuum) {
    await client.end();
    return { autovacuum, vacuums: 0, stop: () => Promise.resolve() };
  }
  say(
    `retention: autovacuum is off on this server: the bench runs VACUUM every ${VACUUM_PERIOD_MS / 1000} s in its place`,
  );
  let running: Promise<unknown> = Promise.resolve();
  let vacuums = 0;
  const timer = setInterval(() => {
    running = client.query('VACUUM').then(
      () => vacuums++,
      () => undefined,
    );
  }, VACUUM_PERIOD_MS);
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      clearInterval(timer);
      await running;
      await client.end();
    })());
  return {
    autovacuum,
    get vacuums() {
      return vacuums;
    },
    stop,
  };
}

/** What bounds each table the runs write to (where the product deletes its rows, if anywhere). */
const KEPT: Record<string, string> = {
  outbox_event: 'published: DURABLE_FETCH_OUTBOX_RETENTION_DAYS',
  idempotency_record: 'DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS, ≥ 1 day',
  fetched_page: 'until stored; expired: idempotency retention',
  fetched_page_part: 'with its staged page',
  queue_sample: '1 day (db/health.ts)',
  downstream_calls: '2 h (CALL_COUNT_RETENTION_MS)',
  fetch_run: 'no retention',
  fetched_record: "no retention: the demo job's business table",
  dead_letter: 'no retention',
  audit_entry: 'no retention',
  downstream_action: 'no retention',
};

/** One snapshot of the soak. */
interface Snapshot {
  label: string;
  runs: number;
  /** Events the partner's webhook had received (deduplicated by event id). */
  eventsDelivered: number;
  tables: TableSizes;
}

export async function benchRetention(opts: BenchOptions): Promise<BenchSection> {
  const { say } = opts;
  const rounds = Number(process.env.BENCH_RETENTION_ROUNDS ?? (opts.quick ? 4 : 12));
  const perRound = Number(process.env.BENCH_RETENTION_RUNS ?? (opts.quick ? 25 : 200));
  const period = opts.quick ? 10 : 15;
  const db = await useTestDatabase();
  const partner = await startPartner({ port: 0, recordCount: () => RECORDS, maxPageSize: RECORDS });
  const client = await testClient();
  const settings = {
    worker: {
      DURABLE_FETCH_CLEANUP_INTERVAL_MS: String(CLEANUP_INTERVAL_MS),
      DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS: String(IDEMPOTENCY_RETENTION_DAYS),
    },
    publisher: {
      DURABLE_FETCH_CLEANUP_INTERVAL_MS: String(CLEANUP_INTERVAL_MS),
      DURABLE_FETCH_OUTBOX_RETENTION_DAYS: String(OUTBOX_RETENTION_S / 86_400),
      DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS: String(IDEMPOTENCY_RETENTION_DAYS),
    },
  };
  let worker: BenchWorker | undefined;
  let publisher: ServiceProcess | undefined;
  let vacuum: Awaited<ReturnType<typeof vacuumStandIn>> | undefined;
  try {
    await createSource(db.prisma, SOURCE, partner.url, { pageSize: RECORDS });
    worker = await startBenchWorker(db.url, settings.worker);
    publisher = await startBenchPublisher(db.url, `${partner.url}/events`, settings.publisher);
    const memory = peakRss([worker.pid, publisher.pid]);
    vacuum = await vacuumStandIn(db.url, say);
    const ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue };
    const snapshots: Snapshot[] = [];
    let runs = 0;
    const snap = async (label: string) => {
      const s = {
        label,
        runs,
        eventsDelivered: partner.events.list().length,
        tables: await tableSizes(db.url),
      };
      snapshots.push(s);
      const outbox = s.tables.outbox_event ?? { rows: 0, bytes: 0 };
      say(
        `retention: ${label}: ${runs} runs, ${s.eventsDelivered} events delivered, outbox_event ${outbox.rows} rows ` +
          `${mib(outbox.bytes)} MiB, idempotency_record ${s.tables.idempotency_record?.rows ?? 0} rows`,
      );
      return s;
    };
    await snap('before');
    const t0 = Date.now();
    for (let r = 1; r <= rounds; r++) {
      // Paced: a round starts every `period` s (or when the last one ends, if later), so the soak
      // outlasts the retention many times over.
      await sleep(t0 + (r - 1) * period * 1000 - Date.now());
      await measurePhase(worker.process, worker.serverPid, perRound, () => startRun(ctx, SOURCE, RECORDS));
      runs += perRound;
      await snap(r === rounds / 2 || (rounds === 1 && r === 1) ? 'middle' : `round ${r}`);
    }
    const soakSeconds = Math.round((Date.now() - t0) / 1000);
    const end = snapshots.at(-1) as Snapshot;
    end.label = 'end';
    say(`retention: no new runs for ${OUTBOX_RETENTION_S} s of retention and 3 cleanup passes…`);
    await sleep(OUTBOX_RETENTION_S * 1000 + 3 * CLEANUP_INTERVAL_MS);
    const settled = await snap(`${OUTBOX_RETENTION_S + (3 * CLEANUP_INTERVAL_MS) / 1000} s later`);
    // The pass the worker runs every interval, as it will run once the idempotency retention has
    // passed: the same statements, with the cut-off one retention (and a minute) ahead.
    const ahead = new Date(Date.now() + IDEMPOTENCY_RETENTION_DAYS * 86_400_000 + 60_000);
    const deleted = await deleteExpired(db.prisma, { now: ahead, maxBatches: 10_000 });
    say(`retention: the cleanup pass at ${ahead.toISOString()} deleted ${JSON.stringify(deleted)}`);
    const expired = await snap(`after the pass at +${IDEMPOTENCY_RETENTION_DAYS} day`);
    const [workerPeakRssMiB = 0, publisherPeakRssMiB = 0] = memory.stop();
    await vacuum.stop();
    const middle = snapshots.find((s) => s.label === 'middle') ?? end;
    return {
      name: 'retention',
      rows: rowsOf(snapshots[0] as Snapshot, middle, end, settled, expired),
      details: {
        rounds,
        runsPerRound: perRound,
        roundPeriodSeconds: period,
        recordsPerRun: RECORDS,
        soakSeconds,
        settings,
        vacuum: vacuum.autovacuum
          ? "the server's autovacuum"
          : `autovacuum off on this server: the bench ran VACUUM every ${VACUUM_PERIOD_MS / 1000} s (${vacuum.vacuums} times)`,
        workerPeakRssMiB,
        publisherPeakRssMiB,
        expiryPass: { now: ahead.toISOString(), deleted },
        snapshots: snapshots.map((s) => ({ ...s, tables: nonZero(s.tables) })),
      },
    };
  } finally {
    await vacuum?.stop();
    await publisher?.stop();
    await worker?.stop();
    await client.connection.close();
    await partner.close();
    await db.drop();
  }
}

/** Each table's rows at the end against the middle, then the outbox settled and the expiry pass. */
function rowsOf(
  before: Snapshot,
  middle: Snapshot,
  end: Snapshot,
  settled: Snapshot,
  expired: Snapshot,
): BenchRow[] {
  const rows: BenchRow[] = [];
  const span = `${middle.runs} → ${end.runs} runs`;
  for (const [table, size] of Object.entries(end.tables)) {
    const mid = middle.tables[table] ?? { rows: 0, bytes: 0 };
    // Tables the soak wrote nothing to (sources, breakers) say nothing about retention.
    if (size.rows === (before.tables[table]?.rows ?? 0) && mid.rows === size.rows) continue;
    rows.push({
      scenario: `${table} rows, ${span} (${mib(mid.bytes)} → ${mib(size.bytes)} MiB; kept: ${KEPT[table] ?? '?'})`,
      ours: size.rows,
      baseline: mid.rows,
      unit: 'rows',
      ratio: size.rows === 0 ? null : round(mid.rows / size.rows),
      goal: '≈ 1.0 bounded, ≈ 0.5 grows with runs',
    });
  }
  rows.push(
    {
      scenario: `outbox_event rows ${OUTBOX_RETENTION_S + (3 * CLEANUP_INTERVAL_MS) / 1000} s after the last run vs events delivered (retention ${OUTBOX_RETENTION_S} s)`,
      ours: settled.tables.outbox_event?.rows ?? 0,
      baseline: settled.eventsDelivered,
      unit: 'rows',
      ratio: null,
    },
    {
      scenario: `idempotency_record rows after the cleanup pass at +${IDEMPOTENCY_RETENTION_DAYS} day vs before it`,
      ours: expired.tables.idempotency_record?.rows ?? 0,
      baseline: settled.tables.idempotency_record?.rows ?? 0,
      unit: 'rows',
      ratio: null,
    },
  );
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchRetention);
