/**
 * `npm run bench`, oversize: records per second of the declarative `http` job on a partner whose
 * pages are larger than the engine asks for (asked 25, it sends 100), and how many requests the
 * partner sees per run. "after" is this tree; "before" is another checkout of the project (today's
 * code, e.g. a clone of HEAD) named by `BENCH_BEFORE_TREE`, run side by side. Each side is a real
 * `durable-fetch worker` process of its own tree, on its own database and task queue, against the
 * same demo partner and dev server, in alternating phases (after, before, before, after, …).
 * Without `BENCH_BEFORE_TREE` only "after" is measured.
 *
 *   git clone . /tmp/before && (cd /tmp/before && npm ci)
 *   BENCH_BEFORE_TREE=/tmp/before npm run bench -- --only oversize
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { useTestDatabase, type TestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { temporalAddress, testClient } from '../test/helpers/temporal.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { nextDate } from './phases.ts';
import { type BenchOptions, type BenchRow, type BenchSection, median, round } from './report.ts';
import { standalone } from './standalone.ts';

/** What the engine asks the partner for at most (the workers' `PARTNER_PAGE_LIMIT`). */
const ASKED = 25;
/** What the partner sends per response, whatever it was asked. */
const PARTNER_PAGE = 100;
/** Stored page sizes measured: a response spans 4 stored pages; a stored page takes 2 responses. */
const PAGE_SIZES = [25, 200] as const;

type Side = 'after' | 'before';

/** The http job's config of a source: the partner's page size is a fixed query parameter. */
function partnerSizedConfig(sourceId: string) {
  return {
    request: {
      path: `/sources/${sourceId}/records`,
      query: { date: '{date}', limit: String(PARTNER_PAGE) },
    },
    auth: { type: 'none' },
    records: { path: 'records' },
    pagination: { type: 'cursor', path: 'nextCursor', param: 'cursor' },
  };
}

/** A `durable-fetch worker` of the tree at `root`, with its output kept for errors. */
interface TreeWorker {
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** Starts `root`'s `durable-fetch worker` (its own workflow bundle) and waits until it polls. */
async function startTreeWorker(root: string, env: Record<string, string>): Promise<TreeWorker> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'bin', 'durable-fetch.js'), 'worker'],
    {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        DURABLE_FETCH_METRICS_PORT: '0',
        LOG_LEVEL: 'warn',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let text = '';
  const exited = once(child, 'exit');
  const polling = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (/worker polling task queue/.test(text)) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then(() => reject(new Error(`worker of ${root} exited before polling:\n${text}`)));
    setTimeout(
      () => reject(new Error(`worker of ${root} not polling after 180 s:\n${text}`)),
      180_000,
    ).unref();
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await polling;
  } catch (err) {
    await stop();
    throw err;
  }
  return { child, output: () => text, stop };
}

/** One side: its worker, database and sources. */
interface Stack {
  side: Side;
  db: TestDatabase;
  worker: TreeWorker;
  taskQueue: string;
}

async function startSide(side: Side, root: string, partner: PartnerServer): Promise<Stack> {
  const db = await useTestDatabase();
  const taskQueue = `bench-oversize-${side}-${randomUUID()}`;
  try {
    for (const pageSize of PAGE_SIZES) {
      const id = sourceIdOf(side, pageSize);
      await createSource(db.prisma, id, partner.url, {
        jobType: 'http',
        pageSize,
        config: partnerSizedConfig(id),
      });
    }
    const worker = await startTreeWorker(root, {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      PARTNER_PAGE_LIMIT: String(ASKED),
    });
    return { side, db, worker, taskQueue };
  } catch (err) {
    await db.drop();
    throw err;
  }
}

/** Workflow ids come from business keys: each side's sources have their own ids. */
const sourceIdOf = (side: Side, pageSize: number) => `bench-oversize-${side}-${pageSize}`;

/** One run of `records` records; its records/s and the partner's requests for it. */
async function measureRun(
  client: Client,
  partner: PartnerServer,
  stack: Stack,
  pageSize: number,
  records: number,
): Promise<{ recordsPerSecond: number; requests: number }> {
  const sourceId = sourceIdOf(stack.side, pageSize);
  const date = nextDate();
  const t0 = performance.now();
  const started = await startFetch(
    { temporal: client, prisma: stack.db.prisma, taskQueue: stack.taskQueue },
    { sourceId, date, requestedBy: 'test' },
  );
  const result = await started.handle.result();
  const seconds = (performance.now() - t0) / 1000;
  if (result.status !== 'succeeded' || result.records !== records) {
    throw new Error(
      `${stack.side} run of ${sourceId} ended ${JSON.stringify(result)}:\n${stack.worker.output()}`,
    );
  }
  return { recordsPerSecond: records / seconds, requests: partner.ledger.count({ sourceId, date }) };
}

export async function benchOversize(opts: BenchOptions): Promise<BenchSection> {
  const records = opts.quick ? 1_000 : 4_000;
  const pairs = opts.quick ? 1 : 3;
  const beforeTree = process.env.BENCH_BEFORE_TREE;
  if (beforeTree !== undefined && !existsSync(path.join(beforeTree, 'bin', 'durable-fetch.js'))) {
    throw new Error(`BENCH_BEFORE_TREE=${beforeTree} is not a checkout of durable-fetch (with npm ci run)`);
  }
  const sides: Side[] = beforeTree === undefined ? ['after'] : ['after', 'before'];
  const partner = await startPartner({ port: 0, recordCount: () => records, maxPageSize: PARTNER_PAGE });
  const client = await testClient();
  const stacks: Stack[] = [];
  try {
    opts.say(
      `oversize: starting the worker of ${sides.map((s) => (s === 'after' ? 'this tree' : beforeTree)).join(' and ')}…`,
    );
    for (const side of sides) {
      stacks.push(await startSide(side, side === 'after' ? PROJECT_ROOT : (beforeTree as string), partner));
    }
    const rate: Record<string, number[]> = {};
    const requests: Record<string, number[]> = {};
    const keyOf = (side: Side, pageSize: number) => `${side}/${pageSize}`;
    for (const stack of stacks) {
      // Warm-up: bundles and caches, opens pools.
      await measureRun(client, partner, stack, PAGE_SIZES[0], records);
    }
    for (let pair = 0; pair < pairs; pair++) {
      // ABBA: a machine that warms up or gets busier favours neither side.
      const order = pair % 2 === 0 ? stacks : [...stacks].reverse();
      for (const stack of [...order, ...[...order].reverse()]) {
        for (const pageSize of PAGE_SIZES) {
          const r = await measureRun(client, partner, stack, pageSize, records);
          const key = keyOf(stack.side, pageSize);
          (rate[key] ??= []).push(r.recordsPerSecond);
          (requests[key] ??= []).push(r.requests);
          opts.say(
            `oversize: ${key}: ${Math.round(r.recordsPerSecond)} records/s, ${r.requests} partner requests`,
          );
        }
      }
    }
    const figure = (xs: Record<string, number[]>, side: Side, pageSize: number): number | null => {
      const values = xs[keyOf(side, pageSize)];
      return values === undefined ? null : median(values);
    };
    const rows: BenchRow[] = [];
    for (const pageSize of PAGE_SIZES) {
      const after = figure(rate, 'after', pageSize) ?? 0;
      const before = figure(rate, 'before', pageSize);
      rows.push({
        scenario: `http job, asked ${ASKED}, partner sends ${PARTNER_PAGE}, stored pages of ${pageSize} (baseline: before)`,
        ours: Math.round(after),
        baseline: before === null ? null : Math.round(before),
        unit: 'records/s',
        ratio: before === null ? null : round(after / before),
      });
      const afterRequests = figure(requests, 'after', pageSize) ?? 0;
      const beforeRequests = figure(requests, 'before', pageSize);
      rows.push({
        scenario: `partner requests per run of ${records} records, stored pages of ${pageSize} (baseline: before)`,
        ours: afterRequests,
        baseline: beforeRequests,
        unit: 'requests',
        ratio: beforeRequests === null ? null : round(beforeRequests / afterRequests),
        goal: `${Math.ceil(records / PARTNER_PAGE)} (one per partner page)`,
      });
    }
    return {
      name: 'oversize',
      rows,
      details: {
        records,
        asked: ASKED,
        partnerPage: PARTNER_PAGE,
        pageSizes: PAGE_SIZES,
        beforeTree: beforeTree ?? 'not measured: set BENCH_BEFORE_TREE to a checkout of the code before',
        rate,
        requests,
      },
    };
  } finally {
    for (const stack of stacks) {
      await stack.worker.stop();
      await stack.db.drop();
    }
    await client.connection.close();
    await partner.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchOversize);
