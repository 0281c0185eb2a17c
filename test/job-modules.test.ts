// An application's jobs beside the built-in ones, without a fork (R12): the modules
// DURABLE_FETCH_JOBS names are loaded and registered, a module that exports no job or cannot be
// loaded is one clear line, and a type taken twice is refused with the registry left as it was.
// Pure: no services (the registry is per process; this file is its own process).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { jobs as builtIn } from '../jobs/index.ts';
import { addJobs, defaultJobs, loadJobModules } from '../jobs/registry.ts';
import { isUserFacingError } from '../runtime/errors.ts';

/** A module's text exporting jobs of `types` under `name` (`jobs` or `default`). */
const moduleOf = (types: string[], name = 'jobs') =>
  `const job = (type) => ({ type, description: 'app job', recordId: (r) => r.id,
     fetchPage: async () => ({ records: [], nextCursor: null }), storePage: async () => ({ events: [] }) });
   ${name === 'default' ? 'export default' : `export const ${name} =`} [${types.map((t) => `job('${t}')`).join(', ')}];`;

function refusedWith(code: string, message: RegExp) {
  return (err: unknown) => {
    assert.ok(isUserFacingError(err), String(err));
    assert.equal(err.code, code);
    assert.match(err.message, message);
    return true;
  };
}

void describe('job modules (DURABLE_FETCH_JOBS)', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'df-job-modules-'));
    await writeFile(path.join(dir, 'shipments.mjs'), moduleOf(['shipments']));
    await writeFile(path.join(dir, 'more.mjs'), moduleOf(['invoices', 'returns'], 'default'));
    await writeFile(path.join(dir, 'nothing.mjs'), 'export const answer = 42;');
    await writeFile(path.join(dir, 'clash.mjs'), moduleOf(['http']));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('job modules: the jobs of every module named are registered beside the built-in ones', async () => {
    await loadJobModules('shipments.mjs, more.mjs', dir);
    const expected = [...builtIn.map((j) => j.type), 'shipments', 'invoices', 'returns'];
    assert.deepEqual(defaultJobs().types, expected.sort());
    assert.equal(defaultJobs().get('shipments').description, 'app job');
  });

  it('job modules: a module loaded again, or a job registered again, adds nothing and is no clash', async () => {
    const before = defaultJobs().types;
    await loadJobModules('shipments.mjs', dir);
    addJobs([defaultJobs().get('shipments')]);
    assert.deepEqual(defaultJobs().types, before);
  });

  it('job modules: a module that exports no job, or cannot be loaded, is refused in one line', async () => {
    await assert.rejects(
      loadJobModules('nothing.mjs', dir),
      refusedWith('INVALID_JOBS_MODULE', /nothing\.mjs exports no jobs/),
    );
    await assert.rejects(
      loadJobModules('missing.mjs', dir),
      refusedWith('INVALID_JOBS_MODULE', /cannot load missing\.mjs/),
    );
  });

  it('job modules: a type taken twice is refused and the registry stays as it was', async () => {
    const before = defaultJobs().types;
    await assert.rejects(loadJobModules('clash.mjs', dir), refusedWith('JOB_REGISTRY', /http/));
    assert.deepEqual(defaultJobs().types, before);
  });
});
