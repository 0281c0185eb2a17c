import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { isUserFacingError } from '../runtime/errors.ts';
import { startEmbeddedPostgres, waitForPostgres } from '../worker/stack/postgres.ts';
import { freePort, isPidAlive, isPortAccepting } from '../runtime/process-utils.ts';
import { redactUrl, redactUrlsIn } from '../runtime/redact.ts';
import { engineConnection } from '../db/pool-config.ts';

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client(engineConnection(url));
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** A pid that certainly belongs to no running process: a child that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(child.stdout);
}

void describe('embedded postgres', () => {
  let tmp: string;
  let dataDir: string;
  let port: number;
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'df-pg-'));
    dataDir = path.join(tmp, 'data');
    port = await freePort();
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  void test('postgres: starts on a fresh dataDir, creates a database, answers queries, stops', async () => {
    const lines: string[] = [];
    const server = await startEmbeddedPostgres({
      dataDir,
      port,
      password: 's3cret!',
      log: (l) => lines.push(l),
    });
    try {
      assert.equal(server.adminUrl, `postgresql://postgres:s3cret!@127.0.0.1:${port}/postgres`);
      await query(server.adminUrl, 'CREATE DATABASE fetch_test');
      await query(server.urlFor('fetch_test'), 'CREATE TABLE kept (id int PRIMARY KEY, note text)');
      await query(server.urlFor('fetch_test'), "INSERT INTO kept VALUES (1, 'survives restarts')");
      const [row] = await query<{ v: string }>(
        server.urlFor('fetch_test'),
        "SELECT current_setting('server_version') AS v",
      );
      assert.match(row?.v ?? '', /^18\./);
      assert.ok(
        lines.some((l) => l.startsWith('Initialised PostgreSQL')),
        lines.join('\n'),
      );
    } finally {
      await server.stop();
    }
    await server.stop(); // idempotent
    assert.equal(await isPortAccepting(port), false, 'the server is gone after stop()');
  });

  void test('postgres: a restart after a killed run removes the stale postmaster.pid and keeps the data', async () => {
    // What a SIGKILLed run leaves behind: postmaster.pid naming a process that no longer exists.
    await writeFile(path.join(dataDir, 'postmaster.pid'), `${deadPid()}\n${dataDir}\n0\n${port}\n`);
    const lines: string[] = [];
    const server = await startEmbeddedPostgres({
      dataDir,
      port,
      password: 's3cret!',
      log: (l) => lines.push(l),
    });
    try {
      const rows = await query<{ note: string }>(server.urlFor('fetch_test'), 'SELECT note FROM kept');
      assert.deepEqual(rows, [{ note: 'survives restarts' }]);
      assert.ok(
        lines.some((l) => l.startsWith('Removing stale')),
        lines.join('\n'),
      );
      assert.ok(
        !lines.some((l) => l.startsWith('Initialis')),
        'an initialised dataDir is not initialised again',
      );
    } finally {
      await server.stop();
    }
  });

  void test('postgres: stop() resolves when the server has already stopped on its own (Ctrl-C in a terminal)', async () => {
    const server = await startEmbeddedPostgres({ dataDir, port, password: 's3cret!' });
    const pid = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    // A terminal's Ctrl-C reaches the whole process group: PostgreSQL stops before we ask it to.
    process.kill(pid, 'SIGINT');
    while (isPidAlive(pid)) await sleep(50);
    const stopped = await Promise.race([
      server.stop().then(() => 'stopped'),
      sleep(60_000).then(() => 'stop() never resolved'),
    ]);
    assert.equal(stopped, 'stopped');
  });

  void test('postgres: a port taken by another program is a UserFacingError naming the port', async () => {
    const blocker = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => blocker.once('listening', resolve));
    const taken = (blocker.address() as net.AddressInfo).port;
    try {
      await assert.rejects(startEmbeddedPostgres({ dataDir, port: taken }), (error: unknown) => {
        assert.ok(isUserFacingError(error));
        assert.equal(error.code, 'POSTGRES_PORT_IN_USE');
        assert.match(error.message, new RegExp(`Port ${taken} on 127\\.0\\.0\\.1 is already in use`));
        return true;
      });
    } finally {
      blocker.close();
    }
  });
});

void describe('waitForPostgres and redaction', () => {
  void test('postgres: waitForPostgres on a closed port names host:port and hides the password', async () => {
    const port = await freePort();
    const started = Date.now();
    await assert.rejects(
      waitForPostgres(`postgres://app:hunter2@127.0.0.1:${port}/x`, 800),
      (error: unknown) => {
        assert.ok(isUserFacingError(error));
        assert.equal(error.code, 'POSTGRES_UNREACHABLE');
        assert.match(
          error.message,
          new RegExp(`^cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port} \\(DATABASE_URL\\): `),
        );
        assert.match(error.message, /ECONNREFUSED/);
        assert.doesNotMatch(error.message, /hunter2/);
        return true;
      },
    );
    assert.ok(Date.now() - started >= 700, 'it retried until the timeout');
  });

  void test('redact: redactUrl hides passwords in userinfo and query, keeps what helps debugging', () => {
    assert.equal(
      redactUrl('postgres://app:hunter2@db.internal:5432/fetch'),
      'postgres://app:***@db.internal:5432/fetch',
    );
    assert.equal(
      redactUrl('postgresql://app:p%40ss@h/db?sslmode=require&password=x'),
      'postgresql://app:***@h/db?sslmode=require&password=***',
    );
    assert.equal(redactUrl('postgres://app@h/db'), 'postgres://app@h/db');
    assert.equal(redactUrl('not a url, but amqp://u:pw@rabbit'), 'not a url, but amqp://u:***@rabbit');
    assert.equal(
      redactUrlsIn('failed: postgres://a:b@h/x and redis://:tok@r:6379'),
      'failed: postgres://a:***@h/x and redis://:***@r:6379',
    );
    assert.equal(
      redactUrlsIn('POST https://hooks.example/in?id=7&token=s3cret&api_key=k3y#x failed'),
      'POST https://hooks.example/in?id=7&token=***&api_key=***#x failed',
    );
    assert.equal(redactUrlsIn('no secrets in ?id=7&page=2'), 'no secrets in ?id=7&page=2');
  });
});
