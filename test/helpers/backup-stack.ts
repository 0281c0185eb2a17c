/**
 * The stack the backup and restore tests take down and bring back: a Temporal dev server of their
 * own (on a SQLite file, so its state can be backed up; never the run's shared server), a real
 * `durable-fetch worker` and `durable-fetch publisher` on a given database, and what one run left
 * behind as PostgreSQL and the demo partner (records, applied events, submissions) each say.
 */
import { Client, Connection } from '@temporalio/client';
import type { PartnerServer } from '../../partner/server.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { type DevServer, startDevServer } from '../../worker/stack/temporal-dev-server.ts';
import { spawnTs, spawnWorker, type Spawned } from './process.ts';

/**
 * A Temporal dev server of the test's own, headless on a free port: on `dbFile` (SQLite, restored
 * or new) or in memory. Stop it with `stop()`.
 */
export function startTemporal(dbFile?: string): Promise<DevServer> {
  const cliPath = process.env.DF_TEST_TEMPORAL_CLI;
  if (!cliPath) throw new Error('DF_TEST_TEMPORAL_CLI is not set: run the tests with test/run.ts');
  return startDevServer({ cliPath, port: 0, headless: true, ...(dbFile ? { dbFile } : {}) });
}

/** One generation of the system's processes: a worker and a publisher on one database and Temporal. */
export interface Stack {
  client: Client;
  worker: Spawned;
  publisher: Spawned;
  /** DATABASE_URL, TEMPORAL_ADDRESS and the task queue: for the CLI, as an operator sets them. */
  env: Record<string, string>;
  /** Kills the worker and the publisher (SIGKILL: lost, not drained) and closes the client. */
  kill(): Promise<void>;
}

export interface StackOptions {
  temporal: DevServer;
  databaseUrl: string;
  taskQueue: string;
  partner: PartnerServer;
  /** On top of the worker's environment (lease, sweep). */
  workerEnv?: Record<string, string>;
}

/** Starts the worker and the publisher; resolves once both run. */
export async function startStack(options: StackOptions): Promise<Stack> {
  const env = {
    DATABASE_URL: options.databaseUrl,
    TEMPORAL_ADDRESS: options.temporal.address,
    DURABLE_FETCH_TASK_QUEUE: options.taskQueue,
  };
  const worker = spawnWorker({ ...env, PARTNER_PAGE_LIMIT: '50', LOG_LEVEL: 'warn', ...options.workerEnv });
  const publisher = spawnTs(['bin/durable-fetch.js', 'publisher'], {
    ...env,
    DURABLE_FETCH_WEBHOOK_URL: `${options.partner.url}/events`,
    LOG_LEVEL: 'info',
  });
  const client = new Client({ connection: await Connection.connect({ address: options.temporal.address }) });
  const stack: Stack = {
    client,
    worker,
    publisher,
    env,
    async kill() {
      await Promise.all([worker.stop('SIGKILL', 5_000), publisher.stop('SIGKILL', 5_000)]);
      await client.connection.close();
    },
  };
  try {
    await Promise.all([
      worker.waitFor(/worker polling task queue/, 120_000),
      publisher.waitFor(/publisher running/, 120_000),
    ]);
  } catch (err) {
    await stack.kill();
    throw err;
  }
  return stack;
}

/** Every record id the partner serves for (source, date), read through its paged records route. */
export async function partnerRecordIds(
  partner: PartnerServer,
  sourceId: string,
  date: string,
): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 1_000; page++) {
    const url = new URL(`${partner.url}/sources/${encodeURIComponent(sourceId)}/records`);
    url.searchParams.set('date', date);
    if (cursor !== null) url.searchParams.set('cursor', cursor);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`partner records ${url.href}: HTTP ${response.status}`);
    const body = (await response.json()) as { records: { id: string }[]; nextCursor: string | null };
    ids.push(...body.records.map((r) => r.id));
    cursor = body.nextCursor;
    if (cursor === null) return ids;
  }
  throw new Error(`partner records of ${sourceId}: more than 1000 pages`);
}

/** What one source's run left behind, as PostgreSQL and the partner each say. */
export interface RunState {
  sourceId: string;
  status: string;
  pagesStored: number;
  recordsStored: number;
  /** Business rows of the source and date, and how many distinct external ids they hold. */
  rows: number;
  distinctRows: number;
  /** The partner's own list for (source, date) equals the rows' external ids, as sets. */
  rowsMatchPartner: boolean;
  partnerRecords: number;
  /** Outbox events of the run per topic, and how many (topic, page) steps they cover. */
  events: number;
  eventSteps: number;
  /** Events the partner applied for the run (each id once), and deliveries it found already applied. */
  applied: number;
  redelivered: number;
  /** Events of the run another consumer holds (a JetStream stream), as the caller found them. */
  heldElsewhere: number;
  /** Every outbox event id of the run was applied by the partner or is held elsewhere. */
  allApplied: boolean;
  deadLetters: string[];
  /** Ledger rows of the run, as `round:state`. */
  actions: string[];
  /** Submissions that took effect at the partner under the source's references, and voids. */
  submits: number;
  voids: number;
  /** Live submissions at the partner, as `reference status`. */
  live: string[];
}

/**
 * Measures the run of `sourceId` on `date`. Read-only. `elsewhere`: ids of the run's events routed
 * to another sink than the partner's webhook, each found held there once.
 */
export async function runState(
  prisma: PrismaClient,
  partner: PartnerServer,
  sourceId: string,
  date: string,
  elsewhere: ReadonlySet<string> = new Set(),
): Promise<RunState> {
  const run = await prisma.fetchRun.findFirstOrThrow({
    where: { sourceId },
    include: { deadLetters: true, downstreamActions: { orderBy: { createdAt: 'asc' } } },
  });
  const rows = await prisma.fetchedRecord.findMany({ where: { sourceId }, select: { externalId: true } });
  const ours = new Set(rows.map((r) => r.externalId));
  const theirs = new Set(await partnerRecordIds(partner, sourceId, date));
  const events = await prisma.outboxEvent.findMany({
    where: { aggregateId: run.id },
    select: { id: true, topic: true, payload: true },
  });
  const steps = new Set(events.map((e) => `${e.topic}/${JSON.stringify(pageNo(e.payload))}`));
  const applied = partner.events.list({ aggregateId: run.id });
  const appliedIds = new Set(applied.map((e) => e.id));
  const mine = (reference: string | undefined) => reference?.startsWith(`fetch-records:${sourceId}:`);
  const effects = (action: 'submit' | 'void') =>
    partner.ledger.entries({ action }).filter((e) => e.effect && mine(e.reference)).length;
  return {
    sourceId,
    status: run.status,
    pagesStored: run.pagesStored,
    recordsStored: run.recordsStored,
    rows: rows.length,
    distinctRows: ours.size,
    rowsMatchPartner: ours.size === theirs.size && [...theirs].every((id) => ours.has(id)),
    partnerRecords: theirs.size,
    events: events.length,
    eventSteps: steps.size,
    applied: applied.length,
    // Deliveries the partner found already applied; refused ones (a 503, a reset) are not duplicates.
    redelivered: partner.events.duplicates({ aggregateId: run.id }),
    heldElsewhere: events.filter((e) => elsewhere.has(e.id)).length,
    allApplied: events.every((e) => appliedIds.has(e.id) || elsewhere.has(e.id)),
    deadLetters: run.deadLetters.map((d) => `${d.status} ${d.errorType}/${d.errorCode ?? ''}`),
    actions: run.downstreamActions.map((a) => `${a.round}:${a.state}`),
    submits: effects('submit'),
    voids: effects('void'),
    live: partner.submissions
      .list()
      .filter((s) => mine(s.reference) && s.status !== 'voided')
      .map((s) => `${s.reference} ${s.status}`),
  };
}

function pageNo(payload: unknown): unknown {
  return typeof payload === 'object' && payload !== null && 'pageNo' in payload ? payload.pageNo : null;
}

/** One line per run for `t.diagnostic`. */
export function stateLine(s: RunState): string {
  return (
    `${s.sourceId} ${s.status}: ${s.pagesStored} pages, ${s.rows} rows (partner ${s.partnerRecords}), ` +
    `${s.events} events (${s.applied} applied, ${s.redelivered} redelivered, ${s.heldElsewhere} elsewhere), ` +
    `ledger [${s.actions.join(', ')}], ${s.submits} submits, ${s.voids} voids, ` +
    `live [${s.live.join(', ')}], dead letters [${s.deadLetters.join(', ')}]`
  );
}
