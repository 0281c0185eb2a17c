// The `durable-fetch` command as users run it: a child process of bin/durable-fetch.js against the
// shared Temporal dev server and cloned PostgreSQL databases. Assertions are on exit codes, the
// exact shape of stderr, and the state left behind (FetchRun rows, Temporal workflows, databases).
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import pg from 'pg';
import { buildProgram } from '../cli/main.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { DEFAULT_MIGRATIONS_DIR, withDatabaseName } from '../prisma/migrator.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { addDays, dateInTimeZone } from '../contract/business-date.ts';
import { lines, runCli, type CliResult } from './helpers/cli.ts';
import { useEmptyDatabase, useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { insertDeadLetter } from './helpers/job-rows.ts';
import { temporalAddress, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';
import { engineConnection } from '../db/pool-config.ts';

const DATE = '2026-03-14'; // in the past: allowed by the default future-date policy

let temporal: Client;

before(async () => {
  temporal = await testClient();
});

after(async () => {
  await temporal?.connection.close();
});

/** The environment of one CLI invocation: its own database and a unique task queue. */
function cliEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: `cli-${randomUUID()}`,
    ...extra,
  };
}

/** A user error: exit 1, nothing on stdout, exactly one line on stderr and no stack trace. */
function assertOneLineError(result: CliResult, pattern: RegExp): string {
  const detail = `stdout: ${result.stdout}\nstderr: ${result.stderr}`;
  assert.equal(result.code, 1, detail);
  assert.equal(result.stdout, '', detail);
  const errLines = lines(result.stderr);
  assert.equal(errLines.length, 1, detail);
  assert.doesNotMatch(result.stderr, /^\s+at /m, detail);
  const [line] = errLines as [string];
  assert.match(line, /^durable-fetch: /);
  assert.match(line, pattern);
  return line;
}

async function assertNoWorkflow(workflowId: string): Promise<void> {
  await assert.rejects(temporal.workflow.getHandle(workflowId).describe(), WorkflowNotFoundError);
}

async function databaseExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: process.env.DF_TEST_PG_ADMIN_URL });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    return rowCount === 1;
  } finally {
    await client.end();
  }
}

describe('cli help', () => {
  it('cli: --help lists every command and exits 0 without reading any configuration', async () => {
    // An invalid DATABASE_URL would fail config validation: help must not get that far.
    const result = await runCli(['--help'], { DATABASE_URL: 'mysql://nope' });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.match(result.stdout, /^Usage: durable-fetch /);
    for (const command of ['run', 'runs', 'worker', 'migrate']) {
      assert.match(result.stdout, new RegExp(`^\\s+${command}\\b`, 'm'), `--help lists ${command}`);
    }
  });

  it('cli: --version and -V print the version of package.json and exit 0 without reading any configuration', async () => {
    const { version } = JSON.parse(await readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-V']) {
      const result = await runCli([flag], { DATABASE_URL: 'mysql://nope' });
      assert.equal(result.code, 0, `${flag}: ${result.stderr}`);
      assert.equal(result.stderr, '', flag);
      assert.equal(result.stdout, `${version}\n`, flag);
    }
  });

  it('cli: run --help exits 0 and documents <sourceId>, --date, --wait and --json', async () => {
    const result = await runCli(['run', '--help'], { DATABASE_URL: 'mysql://nope' });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Usage: durable-fetch run \[options\] <sourceId>/);
    for (const option of ['--date <YYYY-MM-DD>', '--wait', '--json', '--help']) {
      assert.ok(result.stdout.includes(option), `run --help mentions ${option}`);
    }
  });

  // Same exit path as `run --help` (commander's helpDisplayed → exit 0), so these are rendered in
  // process: one spawn each would add seconds and prove nothing more.
  it('cli: the help of runs list, runs show, worker and migrate names their options without opening the context', () => {
    const program = buildProgram(() => assert.fail('rendering help must not open the CLI context'));
    const help = (...path: string[]) => {
      let command = program;
      for (const name of path) {
        command =
          command.commands.find((c) => c.name() === name) ?? assert.fail(`no command ${path.join(' ')}`);
      }
      return command.helpInformation();
    };
    const runsList = help('runs', 'list');
    for (const option of ['--job <type>', '--source <id>', '--status <status>', '--limit <n>', '--json']) {
      assert.ok(runsList.includes(option), `runs list --help mentions ${option}`);
    }
    assert.match(runsList, /queued\|running\|retry_wait\|succeeded\|dead_lettered\|cancelled\|compensated/);
    const runsShow = help('runs', 'show');
    assert.match(runsShow, /^Usage: durable-fetch runs show \[options\] <id>/);
    assert.ok(runsShow.includes('--json'));
    assert.match(runsShow, /<source>\/<date>/);
    assert.match(help('worker'), /^Usage: durable-fetch worker \[options\]\n\n.*task queue/);
    assert.match(help('migrate'), /^Usage: durable-fetch migrate \[options\]\n\n.*migrations/);
    for (const path of [['status'], ['dlq', 'list'], ['dlq', 'replay'], ['reconcile']]) {
      assert.ok(help(...path).includes('--job <type>'), `${path.join(' ')} --help names --job <type>`);
    }
  });
});

// Three at a time: the unreachable-Temporal case (first) spends its ~10 s connect deadline idle
// while the others share the CPUs.
describe('cli: bad input gets one line and leaves nothing half-written', { concurrency: 3 }, () => {
  let db: TestDatabase;
  let env: Record<string, string>;

  before(async () => {
    db = await useTestDatabase();
    await createSource(db.prisma, 'alpha', 'http://127.0.0.1:9');
    await createSource(db.prisma, 'beta', 'http://127.0.0.1:9');
    env = cliEnv(db.url);
  });

  after(async () => {
    await db?.drop();
  });

  /** No FetchRun row anywhere in the database, and no workflow for that id in Temporal. */
  async function assertNothingWritten(workflowId: string): Promise<void> {
    assert.equal(await db.prisma.fetchRun.count(), 0);
    await assertNoWorkflow(workflowId);
  }

  it('cli: an unreachable Temporal prints one line naming Temporal and its address and exits 1', async () => {
    const result = await runCli(['run', 'alpha', '--date', DATE], {
      ...env,
      TEMPORAL_ADDRESS: '127.0.0.1:1',
    });
    assertOneLineError(result, /cannot reach Temporal at 127\.0\.0\.1:1 /);
    await assertNothingWritten(`fetch/fetch-records/alpha/${DATE}`);
  });

  it('cli: an unknown source id prints one line naming the known sources and exits 1', async () => {
    const result = await runCli(['run', 'nosuch', '--date', DATE], env);
    assertOneLineError(result, /unknown source 'nosuch' \(known sources: alpha, beta\)/);
    await assertNothingWritten(`fetch/fetch-records/nosuch/${DATE}`);
  });

  it('cli: a source id outside [a-z0-9_-] is refused before any lookup', async () => {
    const result = await runCli(['run', 'Alpha', '--date', DATE], env);
    assertOneLineError(result, /invalid source id 'Alpha'/);
    await assertNothingWritten(`fetch/fetch-records/Alpha/${DATE}`);
  });

  it('cli: a date that is not on the calendar (2026-02-30) is refused with one line', async () => {
    const result = await runCli(['run', 'alpha', '--date', '2026-02-30'], env);
    assertOneLineError(result, /invalid date '2026-02-30': expected YYYY-MM-DD/);
    await assertNothingWritten('fetch/fetch-records/alpha/2026-02-30');
  });

  it('cli: a date that is not YYYY-MM-DD (yesterday) is refused with one line', async () => {
    const result = await runCli(['run', 'alpha', '--date', 'yesterday'], env);
    assertOneLineError(result, /invalid date 'yesterday': expected YYYY-MM-DD/);
    await assertNothingWritten('fetch/fetch-records/alpha/yesterday');
  });

  it('cli: a date beyond DURABLE_FETCH_MAX_FUTURE_DAYS is refused and the latest allowed date is named', async () => {
    // Policy 1 day; the date is 3 days ahead, so it stays refused even if the CLI's clock has
    // passed midnight UTC since the test read its own.
    const today = dateInTimeZone(new Date(), 'UTC');
    const date = addDays(today, 3);
    const result = await runCli(['run', 'alpha', '--date', date], {
      ...env,
      DURABLE_FETCH_MAX_FUTURE_DAYS: '1',
    });
    const line = assertOneLineError(result, new RegExp(`date ${date} is in the future`));
    const latest = /the latest allowed is (\d{4}-\d{2}-\d{2}) \(UTC, max 1 day\(s\) ahead\)/.exec(line)?.[1];
    assert.ok(latest === addDays(today, 1) || latest === addDays(today, 2), line);
    await assertNothingWritten(`fetch/fetch-records/alpha/${date}`);
  });

  it('cli: a DATABASE_URL naming a missing database says to run `durable-fetch migrate` and creates nothing', async () => {
    const name = `df_missing_${randomBytes(4).toString('hex')}`;
    const url = withDatabaseName(
      process.env.DF_TEST_PG_ADMIN_URL ?? assert.fail('no DF_TEST_PG_ADMIN_URL'),
      name,
    );
    const result = await runCli(['run', 'alpha', '--date', '2026-03-15'], { ...env, DATABASE_URL: url });
    assertOneLineError(
      result,
      new RegExp(`database at \\S+/${name} does not exist: run \`durable-fetch migrate\``),
    );
    assert.equal(await databaseExists(name), false);
    await assertNothingWritten('fetch/fetch-records/alpha/2026-03-15');
  });

  it('cli: an unknown command exits non-zero with a suggestion and a usage hint', async () => {
    const result = await runCli(['runs', 'lsit'], env);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /unknown command 'lsit'/);
    assert.match(result.stderr, /Did you mean list\?/);
    assert.match(result.stderr, /add --help for usage/);
  });

  it('cli: an unknown option of run exits non-zero with a usage hint and starts nothing', async () => {
    const result = await runCli(['run', 'alpha', '--dat', '2026-03-16'], env);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /unknown option '--dat'/);
    assert.match(result.stderr, /add --help for usage/);
    await assertNothingWritten('fetch/fetch-records/alpha/2026-03-16');
  });
});

describe('cli migrate', () => {
  let empty: { url: string; drop: () => Promise<void> };

  before(async () => {
    empty = await useEmptyDatabase();
  });

  after(async () => {
    await empty?.drop();
  });

  async function query<T extends object>(sql: string): Promise<T[]> {
    const client = new pg.Client(engineConnection(empty.url));
    await client.connect();
    try {
      return (await client.query<T>(sql)).rows;
    } finally {
      await client.end();
    }
  }

  it('cli: migrate creates the tables in an empty database and a second migrate reports it up to date', async () => {
    const folders = (await readdir(DEFAULT_MIGRATIONS_DIR, { withFileTypes: true })).filter((e) =>
      e.isDirectory(),
    );
    const first = await runCli(['migrate'], { DATABASE_URL: empty.url });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`applied ${folders.length} migration\\(s\\) to `));
    const tables = await query<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'durable_fetch' ORDER BY 1",
    );
    const names = tables.map((t) => t.name);
    for (const table of ['_prisma_migrations', 'fetch_run', 'fetched_record', 'outbox_event', 'source']) {
      assert.ok(names.includes(table), `table ${table} exists (got ${names.join(', ')})`);
    }
    const applied = await query<{ n: number }>(
      'SELECT count(*)::int AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    assert.equal(applied[0]?.n, folders.length);

    const second = await runCli(['migrate'], { DATABASE_URL: empty.url });
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /is up to date/);
    assert.doesNotMatch(second.stdout, /applied/);
    const rows = await query<{ n: number }>('SELECT count(*)::int AS n FROM _prisma_migrations');
    assert.equal(rows[0]?.n, folders.length);
  });
});

describe('cli runs list and show', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  let runId: string;
  /** A dead-lettered run of the other job, with its open dead letter. */
  let ratesRunId: string;

  before(async () => {
    db = await useTestDatabase();
    env = cliEnv(db.url);
    await createSource(db.prisma, 'gamma', 'http://127.0.0.1:9');
    const run = await db.prisma.fetchRun.create({
      data: {
        jobType: 'fetch-records',
        sourceId: 'gamma',
        businessDate: new Date(`${DATE}T00:00:00Z`),
        payload: { sourceId: 'gamma', businessDate: DATE, requestedBy: 'test' },
        idempotencyKey: `fetch-records:gamma:${DATE}`,
        status: 'dead_lettered',
        attempt: 3,
        scheduledAt: new Date('2026-03-14T02:00:00Z'),
        correlationId: 'corr-cli-1',
        workflowId: `fetch/fetch-records/gamma/${DATE}`,
        workflowRunId: 'run-cli-1',
        pagesStored: 2,
        recordsStored: 200,
        errorClass: 'UpstreamUnavailable',
        errorMessage: 'partner: upstream unavailable (503)',
      },
    });
    runId = run.id;
    await createSource(db.prisma, 'rates', 'http://127.0.0.1:9', { jobType: 'exchange-rates' });
    ratesRunId = (
      await insertDeadLetter(db.prisma, {
        jobType: 'exchange-rates',
        sourceId: 'rates',
        date: DATE,
        finishedAt: new Date(),
      })
    ).run.id;
  });

  after(async () => {
    await db?.drop();
  });

  it('cli: runs list --json prints valid JSON holding the run', async () => {
    const result = await runCli(['runs', 'list', '--json', '--job', 'fetch-records'], env);
    assert.equal(result.code, 0, result.stderr);
    const list = JSON.parse(result.stdout) as Record<string, unknown>[];
    assert.equal(list.length, 1);
    assert.deepEqual(
      {
        id: list[0]?.id,
        sourceId: list[0]?.sourceId,
        businessDate: list[0]?.businessDate,
        status: list[0]?.status,
        attempt: list[0]?.attempt,
        recordsStored: list[0]?.recordsStored,
        workflowId: list[0]?.workflowId,
      },
      {
        id: runId,
        sourceId: 'gamma',
        businessDate: `${DATE}T00:00:00.000Z`,
        status: 'dead_lettered',
        attempt: 3,
        recordsStored: 200,
        workflowId: `fetch/fetch-records/gamma/${DATE}`,
      },
    );
  });

  it('cli: runs show <source>/<date> prints the run field by field', async () => {
    const result = await runCli(['runs', 'show', `gamma/${DATE}`], env);
    assert.equal(result.code, 0, result.stderr);
    const fields = new Map(
      lines(result.stdout).map((line) => {
        const [, key = '', value = ''] = /^(.+?)\s{2,}(.*)$/.exec(line) ?? [];
        return [key, value];
      }),
    );
    assert.equal(fields.get('id'), runId);
    assert.equal(fields.get('job'), 'fetch-records');
    assert.equal(fields.get('source'), 'gamma');
    assert.equal(fields.get('date'), DATE);
    assert.equal(fields.get('status'), 'dead_lettered');
    assert.equal(fields.get('attempt'), '3');
    assert.equal(fields.get('pages'), '2');
    assert.equal(fields.get('records'), '200');
    assert.equal(fields.get('workflow'), `fetch/fetch-records/gamma/${DATE}`);
    assert.equal(fields.get('temporal run'), 'run-cli-1');
    assert.equal(fields.get('idempotency key'), `fetch-records:gamma:${DATE}`);
    assert.equal(fields.get('correlation id'), 'corr-cli-1');
    assert.equal(fields.get('error'), 'UpstreamUnavailable: partner: upstream unavailable (503)');
  });

  it('cli: runs list --job keeps one job type; the table has a JOB column, --json a jobType', async () => {
    const all = JSON.parse((await runCli(['runs', 'list', '--json'], env)).stdout) as {
      id: string;
      jobType: string;
    }[];
    assert.deepEqual(
      all.map((r) => [r.id, r.jobType]).sort(),
      [
        [runId, 'fetch-records'],
        [ratesRunId, 'exchange-rates'],
      ].sort(),
    );
    const rates = await runCli(['runs', 'list', '--job', 'exchange-rates'], env);
    assert.equal(rates.code, 0, rates.stderr);
    const [header, ...rows] = lines(rates.stdout);
    assert.deepEqual(header?.split(/\s{2,}/).slice(0, 4), ['ID', 'JOB', 'SOURCE', 'DATE']);
    assert.equal(rows.length, 1, rates.stdout);
    assert.deepEqual(rows[0]?.split(/\s{2,}/).slice(0, 4), [ratesRunId, 'exchange-rates', 'rates', DATE]);
    assert.equal((await runCli(['runs', 'list', '--job', 'nobody-runs-this'], env)).stdout, 'no runs\n');
    const bad = await runCli(['runs', 'list', '--job', 'Not A Type'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /expected a job type/);
  });

  it('cli: status counts per job type; --job narrows it, and --check judges only that job', async () => {
    type Json = {
      jobType: string | null;
      healthy: boolean;
      problems: string[];
      jobs: { jobType: string; sources: number; finished: number; failed: number; deadLettersOpen: number }[];
      sources: { sourceId: string; jobType: string }[];
    };
    const all = JSON.parse((await runCli(['status', '--json'], env)).stdout) as Json;
    assert.equal(all.jobType, null);
    assert.deepEqual(all.jobs, [
      {
        jobType: 'exchange-rates',
        sources: 1,
        running: 0,
        waiting: 0,
        started: 1,
        finished: 1,
        failed: 1,
        deadLettersOpen: 1,
      },
      {
        jobType: 'fetch-records',
        sources: 1,
        running: 0,
        waiting: 0,
        started: 0,
        finished: 0,
        failed: 0,
        deadLettersOpen: 0,
      },
    ]);
    assert.deepEqual(
      all.sources.map((s) => [s.sourceId, s.jobType]),
      [
        ['gamma', 'fetch-records'],
        ['rates', 'exchange-rates'],
      ],
    );
    const records = JSON.parse(
      (await runCli(['status', '--json', '--job', 'fetch-records'], env)).stdout,
    ) as Json;
    assert.equal(records.jobType, 'fetch-records');
    assert.deepEqual(
      records.jobs.map((j) => j.jobType),
      ['fetch-records'],
    );
    assert.deepEqual(
      records.sources.map((s) => s.sourceId),
      ['gamma'],
    );
    // The open dead letter is the other job's: narrowed to fetch-records, nothing needs attention.
    assert.equal(records.healthy, true, records.problems.join('; '));
    const checkRecords = await runCli(['status', '--check', '--job', 'fetch-records'], env);
    assert.equal(checkRecords.code, 0, checkRecords.stderr);
    assert.match(checkRecords.stdout, /^JOB\s+SOURCES\s+RUNNING/m);
    assert.match(checkRecords.stdout, /^fetch-records\s+1\s+0\s/m);
    assert.doesNotMatch(checkRecords.stdout, /exchange-rates/);
    const checkRates = await runCli(['status', '--check', '--job', 'exchange-rates'], env);
    assert.equal(checkRates.code, 1);
    assert.match(checkRates.stdout, /1 open dead letters \(dlq list --job exchange-rates\)/);
    const checkAll = await runCli(['status', '--check'], env);
    assert.equal(checkAll.code, 1, 'without --job the letter counts as before');
    assert.match(checkAll.stdout, /1 open dead letters \(dlq list\)/);
  });

  it('cli: runs show of an id that matches no run exits 1 with one line', async () => {
    const result = await runCli(['runs', 'show', 'nope'], env);
    assertOneLineError(result, /no run 'nope'/);
  });
});

describe('cli run --wait against a real worker', () => {
  const RECORDS = 120; // pages of 100 → 100 + 20
  let db: TestDatabase;
  let partner: PartnerServer;
  let worker: TestWorker;

  before(async () => {
    db = await useTestDatabase();
    partner = await startPartner({ port: 0, recordCount: () => RECORDS });
    await createSource(db.prisma, 'cli-delta', partner.url);
    worker = await testWorker(testDeps(db.prisma));
  });

  after(async () => {
    await partner?.close();
    await db?.drop();
  });

  it('cli: run --wait --json prints the succeeded result and a second identical run joins it', async () => {
    // The CLI reaches the in-process worker only through DURABLE_FETCH_TASK_QUEUE.
    const env = { ...cliEnv(db.url), DURABLE_FETCH_TASK_QUEUE: worker.taskQueue };
    const args = ['run', 'cli-delta', '--date', DATE, '--wait', '--json'];
    const workflowId = `fetch/fetch-records/cli-delta/${DATE}`;
    type Printed = {
      workflowId: string;
      runId: string;
      businessDate: string;
      joined: boolean;
      result: unknown;
    };

    const { first, second, servedAfterFirst } = await worker.run(async () => {
      const a = await runCli(args, env);
      assert.equal(a.code, 0, a.stderr);
      const servedAfterFirst = partner.ledger.count({ sourceId: 'cli-delta' });
      const b = await runCli(args, env);
      assert.equal(b.code, 0, b.stderr);
      return {
        first: JSON.parse(a.stdout) as Printed,
        second: JSON.parse(b.stdout) as Printed,
        servedAfterFirst,
      };
    });

    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'cli-delta' } });
    assert.deepEqual(first, {
      workflowId,
      runId: first.runId,
      businessDate: DATE,
      joined: false,
      result: { status: 'succeeded', fetchRunId: run.id, pages: 2, records: RECORDS },
    });
    assert.deepEqual(second, { ...first, joined: true });

    assert.equal(await db.prisma.fetchRun.count(), 1);
    assert.equal(run.status, 'succeeded');
    assert.equal(run.recordsStored, RECORDS);
    assert.equal((run.payload as { requestedBy?: string }).requestedBy, 'cli');
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId: 'cli-delta' } }), RECORDS);
    // Joining asked the partner for nothing more.
    assert.ok(servedAfterFirst > 0);
    assert.equal(partner.ledger.count({ sourceId: 'cli-delta' }), servedAfterFirst);
    const described = await temporal.workflow.getHandle(workflowId).describe();
    assert.equal(described.runId, first.runId);
    assert.equal(described.taskQueue, worker.taskQueue);
    assert.equal(described.status.name, 'COMPLETED');
  });

  it('cli: run --wait on a run that fails prints one line naming the error type and exits 1', async () => {
    // Its credentials reference is not set: the fetch fails with a non-retryable PermissionDenied.
    await createSource(db.prisma, 'cli-nocred', partner.url, { credentialsRef: 'DF_SECRET_CLI_NOT_SET' });
    const env = { ...cliEnv(db.url), DURABLE_FETCH_TASK_QUEUE: worker.taskQueue };
    const result = await worker.run(() => runCli(['run', 'cli-nocred', '--date', DATE, '--wait'], env));
    assert.equal(result.code, 1, result.stderr);
    const errLines = lines(result.stderr);
    assert.equal(errLines.length, 1, result.stderr);
    assert.match(errLines[0] ?? '', /failed: PermissionDenied: .*DF_SECRET_CLI_NOT_SET/);
    assert.doesNotMatch(result.stderr, /^\s+at /m);
    assert.equal(partner.ledger.count({ sourceId: 'cli-nocred' }), 0, 'no partner call without credentials');
  });
});
