/**
 * The compiled CLI (scripts/build-cli.ts, bin/cli-build.js): it is used only while it matches its
 * sources, and help loads none of the heavy SDKs (each command imports its implementation when it
 * runs). Which modules a process loads is read from a resolve hook (test/helpers/import-log.js).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { cliBuildPaths, type CliManifest, freshCliEntry, MANIFEST_VERSION } from '../bin/cli-build.js';
import { buildCli } from '../scripts/build-cli.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';

const run = promisify(execFile);
const HOOK = path.join(PROJECT_ROOT, 'test', 'helpers', 'import-log.js');
const HEAVY = ['@temporalio/client', '@temporalio/worker', '@prisma/client'];

/** The module URLs `node --import <hook> <args>` resolves, and its stdout. */
async function loadedBy(args: string[]): Promise<{ urls: string[]; stdout: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'df-imports-'));
  const log = path.join(dir, 'imports.txt');
  try {
    const { stdout } = await run(process.execPath, ['--import', HOOK, ...args], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DF_IMPORT_LOG: log },
      encoding: 'utf8',
    });
    const text = await readFile(log, 'utf8').catch(() => '');
    return { urls: text.split('\n').filter(Boolean), stdout };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const loads = (urls: string[], pkg: string) => urls.some((u) => u.includes(`/node_modules/${pkg}/`));

describe('cli-build: the compiled CLI', () => {
  it('cli-build: the import log sees a package a process does load', async () => {
    const { urls } = await loadedBy(['--input-type=module', '-e', "await import('@temporalio/client')"]);
    assert.ok(loads(urls, '@temporalio/client'), `the hook records imports:\n${urls.join('\n')}`);
  });

  it('cli-build: --help and runs --help run the build and load neither the Temporal SDK nor Prisma', async () => {
    const entry = await buildCli();
    for (const args of [['--help'], ['runs', '--help']]) {
      const { urls, stdout } = await loadedBy(['bin/durable-fetch.js', ...args]);
      assert.match(stdout, /^Usage: durable-fetch/, args.join(' '));
      assert.ok(urls.includes(`file://${entry}`), `${args.join(' ')} ran ${entry}:\n${urls.join('\n')}`);
      assert.ok(loads(urls, 'commander'), `${args.join(' ')} loads commander`);
      for (const pkg of HEAVY) assert.ok(!loads(urls, pkg), `${args.join(' ')} loads ${pkg}`);
    }
  });

  it('cli-build: the build is fresh right after it is made, and its manifest lists the sources it read', async () => {
    const entry = await buildCli();
    assert.equal(freshCliEntry(PROJECT_ROOT), entry);
    const manifest = JSON.parse(await readFile(cliBuildPaths(PROJECT_ROOT).manifest, 'utf8')) as CliManifest;
    const files = manifest.inputs.map(([file]) => file);
    for (const file of ['cli/main.ts', 'cli/commands/runs.ts', 'runtime/config.ts', 'package.json']) {
      assert.ok(files.includes(file), `the manifest lists ${file}`);
    }
  });
});

describe('cli-build: freshness', () => {
  /** A checkout with one input and a build of it, as buildCli records one. */
  async function fakeCheckout() {
    const root = await mkdtemp(path.join(os.tmpdir(), 'df-fresh-'));
    const source = path.join(root, 'a.ts');
    await writeFile(source, 'export const a = 1;\n');
    const { base, manifest } = cliBuildPaths(root);
    await mkdir(path.join(base, 'b1'), { recursive: true });
    await writeFile(path.join(base, 'b1', 'cli.js'), '');
    const s = await stat(source);
    const record: CliManifest = {
      version: MANIFEST_VERSION,
      root,
      dir: 'b1',
      inputs: [['a.ts', s.mtimeMs, s.size]],
    };
    await writeFile(manifest, JSON.stringify(record));
    return { root, source, manifest, record, entry: path.join(base, 'b1', 'cli.js') };
  }

  it('cli-build: an edited input makes the build stale', async () => {
    const c = await fakeCheckout();
    try {
      assert.equal(freshCliEntry(c.root), c.entry);
      await writeFile(c.source, 'export const a = 2;\n');
      assert.equal(freshCliEntry(c.root), null);
    } finally {
      await rm(c.root, { recursive: true, force: true });
    }
  });

  it('cli-build: a deleted input, a moved checkout, a missing entry or a bad manifest is stale too', async () => {
    const cases: [string, (c: Awaited<ReturnType<typeof fakeCheckout>>) => Promise<void>][] = [
      ['deleted input', (c) => rm(c.source)],
      ['moved checkout', (c) => writeFile(c.manifest, JSON.stringify({ ...c.record, root: '/elsewhere' }))],
      ['missing entry', (c) => rm(c.entry)],
      ['bad manifest', (c) => writeFile(c.manifest, '{')],
      ['other version', (c) => writeFile(c.manifest, JSON.stringify({ ...c.record, version: 0 }))],
    ];
    for (const [name, spoil] of cases) {
      const c = await fakeCheckout();
      try {
        assert.equal(freshCliEntry(c.root), c.entry, `${name}: fresh before`);
        await spoil(c);
        assert.equal(freshCliEntry(c.root), null, name);
      } finally {
        await rm(c.root, { recursive: true, force: true });
      }
    }
  });
});
