/**
 * `npm run bench [-- --quick] [-- --only <section...>]`: every performance figure of the project,
 * each measured against its baseline in the same run on this machine (the machines are shared and
 * noisy: ratios, not absolute times, are what compare across runs). Starts its own stack (a
 * Temporal dev server, PostgreSQL, the demo partner), runs each section in turn, prints one table
 * and writes bench/results/<date>.json (`<date>-quick.json` for --quick, `<date>-<section>.json`
 * for --only). Never fails on a figure; exits 1 when a section could not be measured. See
 * bench/README.md.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Command } from 'commander';
import pg from 'pg';
import { startTestServices } from '../test/helpers/services.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { benchActions } from './actions.ts';
import { benchBreaker } from './breaker.ts';
import { benchCapacity } from './capacity.ts';
import { benchCli } from './cli.ts';
import { benchCredentials } from './credentials.ts';
import { benchFetch } from './fetch.ts';
import { benchLimits } from './limits.ts';
import { benchOutbox } from './outbox.ts';
import { benchOverhead } from './overhead.ts';
import { benchOversize } from './oversize.ts';
import type { BenchOptions, BenchSection } from './report.ts';
import { benchRetention } from './retention.ts';
import { benchScale } from './scale.ts';
import { benchStore } from './store.ts';
import { benchTracing } from './tracing.ts';

const SECTIONS: Record<string, (opts: BenchOptions) => Promise<BenchSection>> = {
  cli: benchCli,
  store: benchStore,
  outbox: benchOutbox,
  breaker: benchBreaker,
  credentials: benchCredentials,
  overhead: benchOverhead,
  tracing: benchTracing,
  actions: benchActions,
  scale: benchScale,
  fetch: benchFetch,
  oversize: benchOversize,
  limits: benchLimits,
  capacity: benchCapacity,
  retention: benchRetention,
};

const program = new Command('bench')
  .description('Measure durable-fetch against its baselines on this machine (see bench/README.md).')
  .option('--quick', 'fewer repetitions and smaller loads (a few minutes)', false)
  .option('--only <section...>', `run only these sections: ${Object.keys(SECTIONS).join(', ')}`)
  .parse();
const { quick, only } = program.opts<{ quick: boolean; only?: string[] }>();
const unknown = (only ?? []).filter((s) => !(s in SECTIONS));
if (unknown.length > 0) program.error(`unknown section(s): ${unknown.join(', ')}`);

const say = (line: string) => console.log(`[bench] ${line}`);
const run = promisify(execFile);

async function versions(services: { temporalCli: string; adminUrl: string }) {
  const pkg = (name: string) =>
    import(path.join(PROJECT_ROOT, 'node_modules', name, 'package.json'), { with: { type: 'json' } }).then(
      (m: { default: { version: string } }) => m.default.version,
    );
  const client = new pg.Client({ connectionString: services.adminUrl });
  await client.connect();
  const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
  await client.end();
  const cli = await run(services.temporalCli, ['--version']);
  return {
    node: process.version,
    temporalCli: cli.stdout.trim(),
    postgres: rows[0]?.server_version,
    '@temporalio/worker': await pkg('@temporalio/worker'),
    '@prisma/client': await pkg('@prisma/client'),
    pg: await pkg('pg'),
  };
}

const started = new Date();
const services = await startTestServices(say);
Object.assign(process.env, services.env);
const results: BenchSection[] = [];
const failed: { name: string; error: string }[] = [];
try {
  const machine = {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model,
    memoryMiB: Math.round(os.totalmem() / 2 ** 20),
    loadAverageAtStart: os.loadavg().map((l) => Number(l.toFixed(2))),
  };
  const versionInfo = await versions(services);
  for (const [name, section] of Object.entries(SECTIONS)) {
    if (only && !only.includes(name)) continue;
    const t0 = performance.now();
    try {
      results.push(await section({ quick, say }));
      say(`${name}: done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    } catch (err) {
      failed.push({ name, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      say(`${name}: FAILED: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  console.table(results.flatMap((s) => s.rows.map((row) => ({ section: s.name, ...row }))));
  const date = started.toISOString().slice(0, 10);
  // A partial run never overwrites a whole one's file: `<date>[-quick][-<section>…].json`.
  const suffix = `${quick ? '-quick' : ''}${only ? `-${only.join('-')}` : ''}`;
  const file = path.join(PROJECT_ROOT, 'bench', 'results', `${date}${suffix}.json`);
  const document = {
    date: started.toISOString(),
    quick,
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => Number(l.toFixed(2))) },
    versions: versionInfo,
    seconds: Math.round((Date.now() - started.getTime()) / 1000),
    sections: results,
    failed,
  };
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(document, null, 2)}\n`);
  say(`wrote ${path.relative(PROJECT_ROOT, file)}`);
} finally {
  await services.stop();
}
if (failed.length > 0) process.exitCode = 1;
