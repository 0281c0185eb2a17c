/**
 * `npm start`: the whole stack on embedded defaults, until Ctrl-C (README "Quick start").
 * PostgreSQL (DATABASE_URL or embedded) and Temporal (TEMPORAL_ADDRESS or a local dev server) come
 * up in parallel; then the demo partner API, the worker, the outbox publisher, and one run of the
 * demo source for today — enqueued transactionally and started by the publisher (R5).
 * State lives in `.data/`, so a second `npm start` resumes where the first stopped.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startPartner } from '../../partner/server.ts';
import { syncSchedules } from '../../client/schedules.ts';
import { duration } from '../../client/format.ts';
import { type Config, EMBEDDED_PG, databaseUrl, loadConfig, partnerUrl } from '../../runtime/config.ts';
import { CLI_POOL_SIZE, createPrisma } from '../../db/client.ts';
import { downstreamSlotsAt, startPool } from '../pool-size.ts';
import {
  applyDemoSources,
  DEMO_CATALOG_SECRET_REF,
  DEMO_CATALOG_SOURCE_ID,
  DEMO_FX_SECRET_REF,
  DEMO_FX_SOURCE_ID,
  DEMO_SOURCE_ID,
} from './demo-source.ts';
import { runDemo } from './demo-runs.ts';
import { isUserFacingError } from '../../runtime/errors.ts';
import { redactUrl } from '../../runtime/redact.ts';
import { createLogger } from '../../runtime/logger.ts';
import { installRuntime, startObservability } from '../observability.ts';
import { startEmbeddedPostgres } from './postgres.ts';
import { prepareDatabase } from '../../db/prepare-database.ts';
import { ensureSearchAttributes } from '../search-attributes.ts';
import { resolveTemporalCli } from './temporal-cli.ts';
import { startDevServer } from './temporal-dev-server.ts';
import { connectClient } from '../../runtime/temporal.ts';
import { describeBuild } from '../build-version.ts';
import { describeDownstreamQueues } from '../downstream-pollers.ts';
import { startWorkerProcess } from '../worker-process.ts';
import { startPublisher } from '../outbox/create-publisher.ts';

const say = (line: string) => console.log(`[durable-fetch] ${line}`);
// performance.now() counts from process start, so the figure includes Node and tsx loading.
const since = () => duration(performance.now());

/** Things to stop on exit, newest first. */
const closers: { name: string; close: () => Promise<unknown> }[] = [];
let stopping: Promise<void> | undefined;

function stopAll(reason: string): Promise<void> {
  stopping ??= (async () => {
    say(`${reason}: stopping…`);
    for (const { name, close } of [...closers].reverse()) {
      try {
        await close();
      } catch (err) {
        console.error(`[durable-fetch] stopping ${name} failed:`, err);
      }
    }
    say('stopped; state is kept in .data/ — `npm start` resumes');
  })();
  return stopping;
}

async function startPostgres(config: Config): Promise<string> {
  if (config.database.url) return config.database.url;
  const pg = await startEmbeddedPostgres({
    dataDir: path.join(config.dataDir, 'postgres'),
    port: config.database.embeddedPort,
    ...EMBEDDED_PG,
    log: (line) => say(`postgres: ${line}`),
  });
  closers.push({ name: 'postgres', close: () => pg.stop() });
  return databaseUrl(config);
}

async function startTemporal(config: Config): Promise<void> {
  if (config.temporal.address) {
    const client = await connectClient(config);
    const added = await ensureSearchAttributes(client.connection, config.temporal.namespace);
    if (added.length > 0) say(`registered search attributes: ${added.join(', ')}`);
    await client.connection.close();
    return;
  }
  const cli = await resolveTemporalCli({
    projectRoot: config.projectRoot,
    cliPath: config.temporal.cliPath,
    log: (line) => say(`temporal: ${line}`),
  });
  const server = await startDevServer({
    cliPath: cli.path,
    port: config.temporal.port,
    uiPort: config.temporal.uiPort,
    dbFile: path.join(config.dataDir, 'temporal', 'temporal.db'),
    logFile: path.join(config.dataDir, 'temporal', 'server.log'),
    namespace: config.temporal.namespace,
  });
  closers.push({ name: 'temporal', close: () => server.stop() });
}

async function main(): Promise<void> {
  const config = loadConfig();
  // The console is for people here; JSON logs only at warn and above unless LOG_LEVEL says more.
  const log = createLogger(process.env.LOG_LEVEL ? config.logLevel : 'warn', { process: 'start' });
  const runtime = await installRuntime(config, log);
  process.once('SIGINT', () => void stopAll('SIGINT').then(() => process.exit(0)));
  process.once('SIGTERM', () => void stopAll('SIGTERM').then(() => process.exit(0)));

  say('starting PostgreSQL and Temporal…');
  const [pgResult, temporalResult] = await Promise.allSettled([
    startPostgres(config).then(async (url) => {
      await prepareDatabase(url, (line) => say(`database: ${line}`));
      return url;
    }),
    startTemporal(config),
  ]);
  if (pgResult.status === 'rejected') throw pgResult.reason;
  if (temporalResult.status === 'rejected') throw temporalResult.reason;
  const url = pgResult.value;
  say(`PostgreSQL ready (${config.database.url ? 'DATABASE_URL' : 'embedded, .data/postgres'}) — ${since()}`);
  say(`Temporal ready at ${config.temporal.address ?? `127.0.0.1:${config.temporal.port}`} — ${since()}`);

  // The demo rates and catalog APIs want tokens: local ones, unless the environment names its own.
  process.env[DEMO_FX_SECRET_REF] ??= 'demo-fx-local-token';
  process.env[DEMO_CATALOG_SECRET_REF] ??= 'demo-catalog-local-token';
  const partner = await startPartner({
    ratesToken: process.env[DEMO_FX_SECRET_REF],
    catalogToken: process.env[DEMO_CATALOG_SECRET_REF],
    host: config.partner.host,
    port: config.partner.port,
    lateEffectMs: config.partner.lateEffectMs,
    ledgerFile: path.join(config.dataDir, 'partner', 'ledger.jsonl'),
  });
  closers.push({ name: 'partner', close: () => partner.close() });
  say(`demo partner API at ${partner.url} (ledger: ${partner.url}/_admin/ledger)`);

  const client = await connectClient(config);
  closers.push({ name: 'temporal client', close: () => client.connection.close() });
  // The demo sources go in first, on a command-sized client: the process's pool is sized from the
  // downstreams they leave (their pollers' slots) beside the worker's and the publisher's.
  const { preparedStatements } = config.database;
  const setup = createPrisma(url, { max: CLI_POOL_SIZE, preparedStatements });
  const applied = await applyDemoSources(
    {
      prisma: setup,
      temporal: client,
      taskQueue: config.temporal.taskQueue,
      maxFutureDays: config.runs.maxFutureDays,
    },
    partnerUrl(config),
  ).finally(() => setup.$disconnect());
  const pool = startPool(config, await downstreamSlotsAt(config, url));
  const prisma = createPrisma(url, { ...pool, preparedStatements });
  closers.push({ name: 'prisma', close: () => prisma.$disconnect() });
  const touched = applied.changes.filter((c) => c.action !== 'unchanged');
  say(
    `demo sources from ${applied.file}: ${touched.map((c) => `${c.action} ${c.id}`).join(', ') || 'all unchanged'}`,
  );
  const workerProcess = await startWorkerProcess({
    config,
    prisma,
    temporal: () => Promise.resolve(client),
    log,
    metrics: runtime.metrics,
    // The publisher started below runs one cleanup pass for all (expired idempotency records,
    // staged pages and published events) in this process.
    cleanup: false,
    say,
  });
  // A worker that dies takes the stack down cleanly instead of leaving it half-alive.
  const running = workerProcess.run().catch(async (err: unknown) => {
    console.error('[durable-fetch] worker stopped with an error:', err);
    await stopAll('worker error');
    process.exit(1);
  });
  closers.push({
    name: 'worker',
    close: async () => {
      workerProcess.shutdown();
      await running;
    },
  });
  say(
    `worker polling task queue '${config.temporal.taskQueue}' with jobs ${workerProcess.jobs.types.join(', ')} ` +
      `as ${describeBuild(workerProcess.build)} — ${since()}`,
  );
  const downstreamLine = describeDownstreamQueues(workerProcess.downstreams.polling());
  if (downstreamLine) say(downstreamLine);
  try {
    const synced = await syncSchedules({
      temporal: client,
      prisma,
      taskQueue: config.temporal.taskQueue,
      maxFutureDays: config.runs.maxFutureDays,
    });
    const changed = synced.filter((s) => s.change !== 'unchanged');
    say(
      `schedules synced: ${changed.map((s) => `${s.change} ${s.scheduleId}`).join(', ') || 'nothing changed'}` +
        ` (${synced.length - changed.filter((s) => s.change === 'deleted').length} active)`,
    );
  } catch (err) {
    // A bad schedule config must not keep the rest of the stack down: say it, fix, `schedules sync`.
    if (!isUserFacingError(err)) throw err;
    say(`schedules not synced: ${err.message}`);
  }
  const publisher = await startPublisher(config, prisma, () => Promise.resolve(client), log, runtime.metrics);
  closers.push({ name: 'publisher', close: () => publisher.stop() });
  const observability = await startObservability(config, runtime, {
    prisma,
    temporal: () => Promise.resolve(client),
    log,
    taskQueues: [config.temporal.taskQueue],
  });
  closers.push({ name: 'metrics', close: () => observability.stop() });
  if (observability.url) say(`metrics at ${observability.url} (durable-fetch status: the health screen)`);
  say(`outbox publisher delivering to ${redactUrl(config.outbox.webhookUrl)} and Temporal — ${since()}`);

  // The demo runs start the way applications should start theirs: a start command written in the
  // same transaction as the app's own rows, relayed by the publisher (client/enqueue-fetch.ts).
  const demo = { prisma, client, config, say };
  const first = await runDemo(demo, DEMO_SOURCE_ID, true);
  if (first === 'stuck') {
    await running;
    return;
  }
  await runDemo(demo, DEMO_FX_SOURCE_ID, false);
  await runDemo(demo, DEMO_CATALOG_SOURCE_ID, false);
  say('list runs:  npm run cli -- runs list      start one:  npm run cli -- run demo --date 2026-01-31');
  say('Ctrl-C stops everything; state is kept in .data/');
  await running;
}

main().catch(async (err: unknown) => {
  if (isUserFacingError(err)) console.error(`[durable-fetch] ${err.message}`);
  else console.error('[durable-fetch] failed to start:', err);
  await stopAll('error');
  process.exit(1);
});
