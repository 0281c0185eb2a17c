// The build a worker stamps on its workflow tasks (docs/versioning.md, R9 "on deploy"): the
// operator's DURABLE_FETCH_BUILD_ID, else the package version and the checked-out commit — and
// never a commit that is not the code's (a changed tree, or a copy vendored in another checkout).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isUserFacingError } from '../runtime/errors.ts';
import { DEPLOYMENT_NAME, resolveWorkerBuild } from '../worker/build-version.ts';
import { loadConfig } from '../runtime/config.ts';

let dir: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', ...args], {
    cwd,
    encoding: 'utf8',
  }).trim();

/** A project folder with its package.json (version 9.9.9), optionally its own git checkout. */
async function project(name: string, checkout: boolean): Promise<string> {
  const root = path.join(dir, name);
  await mkdir(root, { recursive: true });
  await writeFile(
    path.join(root, 'package.json'),
    JSON.stringify({ name: 'durable-fetch', version: '9.9.9' }),
  );
  if (checkout) {
    git(root, 'init', '-q');
    git(root, 'add', 'package.json');
    git(root, 'commit', '-q', '-m', 'first');
  }
  return root;
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'df-build-version-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('worker build version', () => {
  it('a git checkout: <package version>+<short commit>, in the durable-fetch deployment', async () => {
    const root = await project('clean', true);
    const commit = git(root, 'rev-parse', '--short', 'HEAD');
    assert.deepEqual(await resolveWorkerBuild(root), {
      deploymentName: DEPLOYMENT_NAME,
      buildId: `9.9.9+${commit}`,
      source: 'package version and git commit',
    });
  });

  it('changed tracked files: the commit is marked .dirty (the code running is not the commit)', async () => {
    const root = await project('dirty', true);
    const commit = git(root, 'rev-parse', '--short', 'HEAD');
    await writeFile(
      path.join(root, 'package.json'),
      JSON.stringify({ name: 'durable-fetch', version: '9.9.9', x: 1 }),
    );
    assert.equal((await resolveWorkerBuild(root)).buildId, `9.9.9+${commit}.dirty`);
  });

  it('not a checkout, or vendored inside another checkout: the package version alone', async () => {
    const plain = await project('plain', false);
    assert.deepEqual(await resolveWorkerBuild(plain), {
      deploymentName: DEPLOYMENT_NAME,
      buildId: '9.9.9',
      source: 'package version',
    });
    const outer = await project('outer', true);
    const vendored = await project(path.join('outer', 'vendor', 'durable-fetch'), false);
    assert.notEqual(git(outer, 'rev-parse', '--short', 'HEAD'), '');
    assert.equal((await resolveWorkerBuild(vendored)).buildId, '9.9.9', 'never the outer checkout’s commit');
  });

  it('DURABLE_FETCH_BUILD_ID wins, and is validated like Temporal wants a build id', async () => {
    const root = await project('override', true);
    const config = loadConfig({ DURABLE_FETCH_BUILD_ID: '2.3.0+ci.1234' });
    assert.equal(config.worker.buildId, '2.3.0+ci.1234');
    assert.deepEqual(await resolveWorkerBuild(root, config.worker.buildId), {
      deploymentName: DEPLOYMENT_NAME,
      buildId: '2.3.0+ci.1234',
      source: 'DURABLE_FETCH_BUILD_ID',
    });
    assert.equal(loadConfig({}).worker.buildId, undefined);
    for (const bad of ['with space', 'x'.repeat(256), 'tab\there']) {
      assert.throws(
        () => loadConfig({ DURABLE_FETCH_BUILD_ID: bad }),
        (err: unknown) =>
          isUserFacingError(err) &&
          err.code === 'INVALID_CONFIG' &&
          err.message.includes('DURABLE_FETCH_BUILD_ID'),
      );
    }
  });
});
