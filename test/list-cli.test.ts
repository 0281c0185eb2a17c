// `durable-fetch runs list` and `dlq list` as a user runs them: they read through one plain
// node-postgres connection, never loading the Prisma runtime, print what Prisma's rows print, and
// report a database they cannot use in one line (missing, not migrated, unreachable), by SQLSTATE,
// with the URL's password hidden.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { view } from '../client/dead-letters/view.ts';
import { withDatabaseName } from '../prisma/migrator.ts';
import { freePort } from '../runtime/process-utils.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { assertOneLineError, json, runCli } from './helpers/cli.ts';
import { useEmptyDatabase, useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { insertDeadLetter, insertRun } from './helpers/job-rows.ts';

const run = promisify(execFile);
const HOOK = path.join(PROJECT_ROOT, 'test', 'helpers', 'import-log.js');
const LISTINGS = [
  ['runs', 'list'],
  ['dlq', 'list'],
];

let db: TestDatabase;

before(async () => {
  db = await useTestDatabase();
  await createSource(db.prisma, 'alpha', 'http://127.0.0.1:1');
  await insertRun(db.prisma, {
    jobType: 'fetch-records',
    sourceId: 'alpha',
    date: '2026-03-01',
    status: 'running',
  });
  await insertDeadLetter(db.prisma, { jobType: 'exchange-rates', sourceId: 'alpha', date: '2026-03-02' });
});

after(async () => {
  await db?.drop();
});

/** Prisma's rows as the CLI's --json prints them (Dates as ISO text). */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** `durable-fetch <args>` with the import log preloaded: its stdout and the module URLs it resolved. */
async function withImportLog(args: string[], env: Record<string, string>) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'df-list-imports-'));
  const log = path.join(dir, 'imports.txt');
  try {
    const { stdout } = await run(process.execPath, ['--import', HOOK, 'bin/durable-fetch.js', ...args], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DF_IMPORT_LOG: log, ...env },
      encoding: 'utf8',
    });
    return { stdout, urls: (await readFile(log, 'utf8')).split('\n').filter(Boolean) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

void describe('list cli: runs list and dlq list', () => {
  void it('list cli: runs list --json prints the rows Prisma reads, in a time zone east of UTC too', async () => {
    const expected = asJson(
      await db.prisma.fetchRun.findMany({ orderBy: [{ businessDate: 'desc' }, { createdAt: 'desc' }] }),
    );
    for (const TZ of ['UTC', 'Pacific/Kiritimati']) {
      const printed = json<unknown[]>(await runCli(['runs', 'list', '--json'], { DATABASE_URL: db.url, TZ }));
      assert.deepStrictEqual(printed, expected, TZ);
    }
  });

  void it('list cli: dlq list --json prints the letters Prisma reads, in a time zone east of UTC too', async () => {
    const letters = await db.prisma.deadLetter.findMany({ where: { status: 'open' } });
    assert.equal(letters.length, 1);
    for (const TZ of ['UTC', 'Pacific/Kiritimati']) {
      const printed = json<unknown[]>(await runCli(['dlq', 'list', '--json'], { DATABASE_URL: db.url, TZ }));
      assert.deepStrictEqual(printed, asJson(letters.map(view)), TZ);
    }
  });

  void it('list cli: neither listing loads the Prisma runtime or the Temporal SDK', async () => {
    for (const args of LISTINGS) {
      const { stdout, urls } = await withImportLog([...args, '--json'], { DATABASE_URL: db.url });
      // The run and the letter's run; the letter.
      assert.equal((JSON.parse(stdout) as unknown[]).length, args[0] === 'runs' ? 2 : 1, args.join(' '));
      assert.ok(
        urls.some((u) => u.includes('/node_modules/commander/')),
        'the import log records imports',
      );
      for (const pkg of ['@prisma/client', '@temporalio/client', '@temporalio/envconfig']) {
        assert.ok(!urls.some((u) => u.includes(`/node_modules/${pkg}/`)), `${args.join(' ')} loads ${pkg}`);
      }
    }
  });

  void it('list cli: a missing database says to run `durable-fetch migrate`', async () => {
    const name = `df_missing_${randomBytes(4).toString('hex')}`;
    const url = withDatabaseName(db.url, name);
    for (const args of LISTINGS) {
      const result = await runCli(args, { DATABASE_URL: url });
      assertOneLineError(
        result,
        new RegExp(`database at \\S+/${name} does not exist: run \`durable-fetch migrate\``),
      );
    }
  });

  void it('list cli: a database without the tables says it is not migrated', async () => {
    const empty = await useEmptyDatabase();
    try {
      for (const args of LISTINGS) {
        const result = await runCli(args, { DATABASE_URL: empty.url });
        assertOneLineError(result, /database at \S+ is not migrated: run `durable-fetch migrate`/);
      }
    } finally {
      await empty.drop();
    }
  });

  void it('list cli: an unreachable server is named with the password hidden', async () => {
    const port = await freePort();
    const url = `postgres://app:hunter2@127.0.0.1:${port}/x`;
    for (const args of LISTINGS) {
      const result = await runCli(args, { DATABASE_URL: url });
      assertOneLineError(
        result,
        new RegExp(
          `cannot reach PostgreSQL at postgres://app:\\*{3}@127\\.0\\.0\\.1:${port}/x \\(DATABASE_URL\\): ECONNREFUSED`,
        ),
      );
      assert.doesNotMatch(result.stderr, /hunter2/);
    }
  });
});
