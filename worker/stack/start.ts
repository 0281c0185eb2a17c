/**
 * `npm start`: the whole stack on embedded defaults, until Ctrl-C (README "Quick start").
 * PostgreSQL (DATABASE_URL or embedded) and Temporal (TEMPORAL_ADDRESS or a local dev server) come
 * up in parallel; then the demo partner API, the worker, the outbox publisher, and one run of the
 * demo source for today — enqueued transactionally and started by the publisher (R5). The worker
 * and the publisher share the process's runtime (worker/boot.ts): one pool, one Temporal client,
 * one `/metrics`, one stop.
 * State lives in `.data/`, so a second `npm start` resumes where the first stopped.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startPartner } from '../../partner/server.ts';
import { syncSchedules } from '../../client/schedules.ts';
import { duration } from '../../client/format.ts';
import { EMBEDDED_PG, databaseUrl, migrationUrl, partnerUrl } from '../../runtime/config.ts';
import { CLI_POOL_SIZE, createPrisma } from '../../db/client.ts';
import { downstreamSlotsAt, startPool } from '../pool-size.ts';
import {
  applyDemoSources,
  DEMO_CATALOG_SOURCE_ID,
  DEMO_FX_SOURCE_ID,
  DEMO_SOURCE_ID,
  demoPartnerTokens,
  demoTokenLines,
  demoTokens,
} from './demo-source.ts';
import { runDemo } from './demo-runs.ts';
import { isUserFacingError } from '../../runtime/errors.ts';
import { redactUrl } from '../../runtime/redact.ts';
import { bootProcess, type ProcessRuntime, type StopReason } from '../boot.ts';
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

async function startPostgres(rt: ProcessRuntime): Promise<string> {
  const { config } = rt;
  if (config.database.url) return config.database.url;
  const pg = await startEmbeddedPostgres({
    dataDir: path.join(config.dataDir, 'postgres'),
    port: config.database.embeddedPort,
    ...EMBEDDED_PG,
    log: (line) => say(`postgres: ${line}`),
  });
  rt.onStop('postgres', () => pg.stop());
  return databaseUrl(config);
}

async function startTemporal(rt: ProcessRuntime): Promise<void> {
  const { config } = rt;
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
  rt.onStop('temporal', () => server.stop());
}

/** The local stack, then the worker and the publisher on the process's runtime, then the demo. */
async function startStack(rt: ProcessRuntime): Promise<void> {
  const { config } = rt;
  say('starting PostgreSQL and Temporal…');
  const [pgResult, temporalResult] = await Promise.allSettled([
    startPostgres(rt).then(async (url) => {
      // Behind a transaction pooler, migrations go to DIRECT_DATABASE_URL.
      await prepareDatabase(config.database.url ? migrationUrl(config) : url, (line) =>
        say(`database: ${line}`),
      );
      return url;
    }),
    startTemporal(rt),
  ]);
  if (pgResult.status === 'rejected') throw pgResult.reason;
  if (temporalResult.status === 'rejected') throw temporalResult.reason;
  const url = pgResult.value;
  say(`PostgreSQL ready (${config.database.url ? 'DATABASE_URL' : 'embedded, .data/postgres'}) — ${since()}`);
  say(`Temporal ready at ${config.temporal.address ?? `127.0.0.1:${config.temporal.port}`} — ${since()}`);

  // The demo rates and catalog APIs want tokens: local ones, unless the environment names its own.
  // The worker of this process reads them from the variables the demo sources name.
  const tokens = await demoTokens();
  for (const t of [tokens.rates, tokens.catalog]) process.env[t.ref] = t.token;
  const partner = await startPartner({
    ...demoPartnerTokens(tokens),
    host: config.partner.host,
    port: config.partner.port,
    lateEffectMs: config.partner.lateEffectMs,
    ledgerFile: path.join(config.dataDir, 'partner', 'ledger.jsonl'),
  });
  rt.onStop('partner', () => partner.close());
  say(`demo partner API at ${partner.url} (ledger: ${partner.url}/_admin/ledger)`);

  const client = await rt.temporal();
  // The demo sources go in first, on a command-sized client: the process's pool is sized from the
  // downstreams they leave (their pollers' slots) beside the worker's and the publisher's.
  const setup = createPrisma(url, {
    max: CLI_POOL_SIZE,
    preparedStatements: config.database.preparedStatements,
    pooling: config.database.pooling,
  });
  const applied = await applyDemoSources(
    {
      prisma: setup,
      temporal: client,
      taskQueue: config.temporal.taskQueue,
      maxFutureDays: config.runs.maxFutureDays,
    },
    partnerUrl(config),
  ).finally(() => setup.$disconnect());
  const prisma = await rt.database(startPool(config, await downstreamSlotsAt(config, url)), url);
  const touched = applied.changes.filter((c) => c.action !== 'unchanged');
  say(
    `demo sources from ${applied.file}: ${touched.map((c) => `${c.action} ${c.id}`).join(', ') || 'all unchanged'}`,
  );
  const workerProcess = await startWorkerProcess({
    config,
    prisma,
    temporal: rt.temporal,
    log: rt.log,
    metrics: rt.metrics,
    // The publisher started below runs one cleanup pass for all (expired idempotency records,
    // staged pages and published events) in this process.
    cleanup: false,
    say,
  });
  // A worker that dies takes the stack down cleanly instead of leaving it half-alive.
  rt.watch('worker', workerProcess.run(), () => workerProcess.shutdown());
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
  const publisher = await startPublisher(config, prisma, rt.temporal, rt.log, rt.metrics);
  rt.onStop('publisher', () => publisher.stop());
  rt.readyWhen(() => workerProcess.worker.getState() === 'RUNNING' && publisher.publisher.claiming);
  const observability = await rt.serveMetrics(prisma);
  if (observability.url) say(`metrics at ${observability.url} (durable-fetch status: the health screen)`);
  say(`outbox publisher delivering to ${redactUrl(config.outbox.webhookUrl)} and Temporal — ${since()}`);

  // The demo runs start the way applications should start theirs: a start command written in the
  // same transaction as the app's own rows, relayed by the publisher (client/enqueue-fetch.ts).
  const demo = { prisma, client, config, say };
  const first = await runDemo(demo, DEMO_SOURCE_ID, true);
  // Stuck: the stack stays up for `outbox status` to show what holds it.
  if (first === 'stuck') return;
  await runDemo(demo, DEMO_FX_SOURCE_ID, false);
  await runDemo(demo, DEMO_CATALOG_SOURCE_ID, false);
  say('list runs:  npm run cli -- runs list      start one:  npm run cli -- run demo --date 2026-01-31');
  // The demo sources read their partner tokens from these variables: another shell needs them for
  // `sources try`, `reconcile` and a worker of its own (demo-only values of the local partner).
  // Printed bare, so that they paste into a shell as they are.
  say(
    'the demo partner tokens, for the CLI in another shell (e.g. `npm run cli -- sources try demo-fx --date <YYYY-MM-DD>`):',
  );
  for (const line of demoTokenLines(tokens)) console.log(line);
  say('Ctrl-C stops everything; state is kept in .data/');
}

/** Prints what stopped the stack, when something failed. */
function reportFailure(why: StopReason): void {
  if (why.part) console.error(`[durable-fetch] ${why.part} stopped with an error:`, why.error);
  else if (isUserFacingError(why.error)) console.error(`[durable-fetch] ${why.error.message}`);
  else console.error('[durable-fetch] failed to start:', why.error);
}

let reported = false;
bootProcess(
  {
    name: 'start',
    // The console is for people here; JSON logs only at warn and above unless LOG_LEVEL says more.
    ...(process.env.LOG_LEVEL ? {} : { logLevel: 'warn' }),
    temporalWorkers: true,
    say,
    printError: (line, err) => console.error(`[durable-fetch] ${line}`, err),
    stopping: (why) => {
      const failed = 'error' in why;
      if (failed) {
        reported = true;
        reportFailure(why);
      }
      const reason = why.signal ?? (why.part ? `${why.part} ${failed ? 'error' : 'ended'}` : 'error');
      say(`${reason}: stopping…`);
    },
    stopped: () => say('stopped; state is kept in .data/ — `npm start` resumes'),
  },
  startStack,
).catch((error: unknown) => {
  // Reported already, unless the process's runtime could not even be built (its configuration).
  if (!reported) reportFailure({ error });
  process.exit(1);
});
