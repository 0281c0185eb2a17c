/**
 * The package as a team uses it (R12): `npm run pack` builds the tarball, the example application
 * (examples/app/, its own package.json) installs it into a temporary copy, type-checks against
 * the shipped .d.ts, and runs its own job end to end with the shipped test kit on the run's real
 * Temporal and PostgreSQL. The `durable-fetch` command of the installed project loads the
 * application's jobs (DURABLE_FETCH_JOBS). And the application's own Prisma schema, compared with
 * `public` as Prisma Migrate compares it, sees none of the engine's tables.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { applyMigrations } from '../prisma/migrator.ts';
import { findSchemaDrift } from '../prisma/drift.ts';
import { pack } from '../scripts/pack.ts';
import { useEmptyDatabase } from './helpers/database.ts';
import { Client } from 'pg';
import { temporalAddress } from './helpers/temporal.ts';

const run = promisify(execFile);
const EXAMPLE = path.join(PROJECT_ROOT, 'examples', 'app');

/** Runs `command` in `cwd`; a failure carries its output. */
async function sh(cwd: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  // Not NODE_TEST_CONTEXT: a `node --test` below would report to this runner instead of printing.
  const { NODE_TEST_CONTEXT: _, ...inherited } = process.env;
  try {
    return await run(command, args, { cwd, env: { ...inherited, ...env }, maxBuffer: 32 * 1024 * 1024 });
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed:\n${stdout}\n${stderr}`, { cause: err });
  }
}

void describe('the example application on the packed engine', () => {
  let tmp: string;
  let app: string;

  before(async () => {
    tmp = await mkdtemp(path.join(tmpdir(), 'df-example-'));
    const tarball = await pack(tmp);
    app = path.join(tmp, 'app');
    await cp(EXAMPLE, app, {
      recursive: true,
      filter: (src) => !src.includes(`${path.sep}node_modules`) && !src.endsWith('package-lock.json'),
    });
    // The tarball just built instead of the checkout's .pack/: what `npm install durable-fetch` gives.
    const manifest = JSON.parse(await readFile(path.join(app, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    manifest.dependencies['durable-fetch'] = `file:${tarball}`;
    await writeFile(path.join(app, 'package.json'), JSON.stringify(manifest, null, 2));
    await sh(app, 'npm', ['install', '--prefer-offline', '--no-audit', '--no-fund']);
  });

  after(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  void test('example app: installs, type-checks against the shipped types, and its job test passes on real services', async () => {
    const adminUrl = process.env.DF_TEST_PG_ADMIN_URL ?? '';
    const { stdout } = await sh(app, 'npm', ['test'], {
      DATABASE_URL: adminUrl,
      TEMPORAL_ADDRESS: temporalAddress(),
    });
    assert.match(stdout, /# pass 2/);
    assert.match(stdout, /# fail 0/);
  });

  void test("example app: the installed CLI runs and checks the app's sources with the app's own job", async () => {
    const bin = path.join(app, 'node_modules', '.bin', 'durable-fetch');
    const { stdout: version } = await sh(app, bin, ['--version']);
    const pkg = JSON.parse(await readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    assert.equal(version.trim(), pkg.version);
    // Without the app's jobs the file names an unknown job; with them it is valid.
    await assert.rejects(sh(app, bin, ['sources', 'validate', '-f', 'sources.yaml']), /shipments/);
    const { stdout } = await sh(app, bin, ['sources', 'validate', '-f', 'sources.yaml'], {
      DURABLE_FETCH_JOBS: 'src/jobs/index.ts',
      NODE_OPTIONS: '--import tsx',
    });
    assert.match(stdout, /^ok: 1 source$/m);
  });

  void test("example app: its Prisma schema matches public exactly, the engine's tables in their own schema beside it", async () => {
    const db = await useEmptyDatabase();
    try {
      await applyMigrations(db.url);
      await applyMigrations(db.url, {
        migrationsDir: path.join(EXAMPLE, 'prisma', 'migrations'),
        schema: 'public',
      });
      const schemaPath = path.join(EXAMPLE, 'prisma', 'schema.prisma');
      // What Prisma Migrate diffs for the application: its schema against `public`. No drift, so
      // `prisma migrate dev` offers to drop nothing.
      assert.deepEqual(await findSchemaDrift(db.url, { schemaPath, schema: 'public' }), []);
      // And the engine is whole in its own schema.
      assert.deepEqual(await findSchemaDrift(db.url), []);
    } finally {
      await db.drop();
    }
    // The same check does see engine tables where they would be drift (the layout before them).
    const old = await useEmptyDatabase();
    try {
      await applyMigrations(old.url, { schema: 'public' });
      const drift = await findSchemaDrift(old.url, {
        schemaPath: path.join(EXAMPLE, 'prisma', 'schema.prisma'),
        schema: 'public',
      });
      assert.ok(
        drift.includes('table fetch_run exists in the database but no model in the Prisma schema maps to it'),
        drift.join('\n'),
      );
    } finally {
      await old.drop();
    }
  });

  void test('example app: its own worker process, the installed CLI and its startFetch run the job end to end', async () => {
    const db = await useEmptyDatabase();
    // A carrier with one day of three shipments and an invoice API, as the job expects.
    const invoices: { id: string; reference: string }[] = [];
    const carrier = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://carrier.test');
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.headers.authorization !== 'Bearer carrier-token') return reply(401, { error: 'unauthorized' });
      if (req.method === 'GET' && url.pathname === '/v1/shipments') {
        const items = ['a', 'b', 'c'].map((id, i) => ({
          id: `shp_${id}`,
          shipped_on: url.searchParams.get('shipped_on'),
          status: 'in_transit',
          weight_grams: 500 + i,
        }));
        return reply(200, { items, next_cursor: null });
      }
      if (req.method === 'GET' && url.pathname === '/v1/invoices') {
        return reply(200, {
          data: invoices.filter((i) => i.reference === url.searchParams.get('reference')),
        });
      }
      if (req.method === 'POST' && url.pathname === '/v1/invoices') {
        let text = '';
        req.on('data', (chunk: Buffer) => (text += chunk.toString()));
        req.on('end', () => {
          const invoice = {
            id: `inv_${invoices.length + 1}`,
            status: 'open',
            ...(JSON.parse(text) as { reference: string }),
          };
          invoices.push(invoice);
          reply(201, invoice);
        });
        return;
      }
      reply(404, {});
    });
    await new Promise<void>((resolve) => carrier.listen(0, '127.0.0.1', resolve));
    const carrierUrl = `http://127.0.0.1:${(carrier.address() as AddressInfo).port}`;
    const env = {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: `example-${path.basename(tmp)}`,
      DURABLE_FETCH_METRICS_PORT: '0',
      DF_SECRET_ACME_CARRIER: 'carrier-token',
      DURABLE_FETCH_JOBS: 'src/jobs/index.ts',
      NODE_OPTIONS: '--import tsx',
    };
    const bin = path.join(app, 'node_modules', '.bin', 'durable-fetch');
    const worker = spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
      cwd: app,
      env: { ...process.env, ...env, NODE_TEST_CONTEXT: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    worker.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => worker.on('exit', (code) => resolve(code)));
    try {
      // The engine's migrations, as its docs say; the application's own (`prisma migrate deploy` there).
      await sh(app, bin, ['migrate'], env);
      await applyMigrations(db.url, {
        migrationsDir: path.join(app, 'prisma', 'migrations'),
        schema: 'public',
      });
      await sh(
        app,
        bin,
        [
          'sources',
          'add',
          'example-proc',
          '--job',
          'shipments',
          '--base-url',
          carrierUrl,
          '--credentials-ref',
          'DF_SECRET_ACME_CARRIER',
          '--config',
          '{"invoiceAccount":"acme-logistics"}',
          '--submit-summary',
          '--reason',
          'example app test',
        ],
        env,
      );
      const deadline = Date.now() + 120_000;
      while (!/worker polling task queue .* with jobs .*shipments/.test(stderr)) {
        assert.ok(Date.now() < deadline && worker.exitCode === null, `the worker did not start:\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const { stdout } = await sh(
        app,
        process.execPath,
        ['--import', 'tsx', 'src/start-fetch.ts', 'example-proc', '2026-11-21'],
        env,
      );
      assert.match(stdout, /joined: false/);

      const pg = new Client({ connectionString: db.url });
      await pg.connect();
      try {
        const { rows } = await pg.query<{ id: string; shipped_on: string }>(
          "SELECT id, to_char(shipped_on, 'YYYY-MM-DD') AS shipped_on FROM public.shipment ORDER BY id",
        );
        assert.deepEqual(
          rows,
          ['shp_a', 'shp_b', 'shp_c'].map((id) => ({ id, shipped_on: '2026-11-21' })),
        );
      } finally {
        await pg.end();
      }
      assert.equal(invoices.length, 1, 'one invoice at the carrier');
      worker.kill('SIGTERM');
      assert.equal(await exited, 0, stderr);
      assert.match(stderr, /worker stopped/);
    } finally {
      worker.kill('SIGKILL');
      await new Promise<void>((resolve) => carrier.close(() => resolve()));
      await db.drop();
    }
  });
});
