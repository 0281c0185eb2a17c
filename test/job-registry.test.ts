// The job registry: a mistake in the job list stops a process with one clear line naming it, a
// type no job has is an InvalidInput failure listing the known ones, and a source's config is
// checked against its job's schema one problem per line. Last, end to end: a source of a job the
// worker does not run dead-letters its run instead of failing somewhere inside the engine.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { defineJob, type AnyJob } from '../activities/job-api/index.ts';
import { createJobRegistry, parseJobConfig } from '../activities/job-api/registry.ts';
import { detailsOf } from '../activities/errors.ts';
import { exchangeRatesJob } from '../jobs/exchange-rates.ts';
import { fetchRecordsJob } from '../jobs/fetch-records/index.ts';
import { jobs } from '../jobs/index.ts';
import { defaultJobs } from '../jobs/registry.ts';
import { startPartner } from '../partner/server.ts';
import { isUserFacingError } from '../runtime/errors.ts';
import { jobTestKit } from './helpers/job-kit.ts';
import { registeredJobTypes } from './helpers/job-types.ts';

/** A minimal valid job of `type`. */
const job = (type: string, extra: Partial<AnyJob> = {}): AnyJob =>
  defineJob({
    type,
    description: 'test-only',
    recordId: (r: { id: string }) => r.id,
    fetchPage: () => Promise.resolve({ records: [], nextCursor: null }),
    storePage: () => Promise.resolve({ events: [] }),
    ...extra,
  });

/** The UserFacingError `createJobRegistry(jobs)` throws: code JOB_REGISTRY, its message matching. */
function refused(jobs: readonly AnyJob[], message: RegExp): void {
  assert.throws(
    () => createJobRegistry(jobs),
    (err: unknown) => {
      assert.ok(isUserFacingError(err), String(err));
      assert.equal(err.code, 'JOB_REGISTRY');
      assert.match(err.message, message);
      assert.doesNotMatch(err.message, /\n/, 'one line');
      return true;
    },
  );
}

describe('job registry', () => {
  it('job-registry: the deployment’s jobs register, sorted by type', () => {
    // Every job of jobs/index.ts, whichever they are; the built-in ones are among them.
    const registry = createJobRegistry(jobs);
    assert.deepEqual(registry.types, jobs.map((j) => j.type).sort());
    for (const j of jobs) assert.equal(registry.get(j.type), j, j.type);
    assert.deepEqual(defaultJobs().types, registry.types, 'defaultJobs() is the registry of jobs/index.ts');
    assert.deepEqual(registeredJobTypes(), registry.types);
    assert.equal(registry.find('nope'), undefined);
  });

  it('job-registry: two jobs under one type are refused, naming the type', () => {
    refused([job('acme-orders'), job('other'), job('acme-orders')], /two jobs .* type 'acme-orders'/);
    refused([fetchRecordsJob, { ...exchangeRatesJob, type: 'fetch-records' }], /'fetch-records'/);
  });

  it('job-registry: a malformed type is refused, naming it', () => {
    for (const type of ['Acme', 'acme_orders', '', '-acme', 'a'.repeat(42), 'acme orders']) {
      refused([job(type)], new RegExp(`job type '${type}' must be`));
    }
    refused(
      [{ ...job('x'), type: undefined } as unknown as AnyJob],
      /a job has no type \(its type is undefined\)/,
    );
    refused([{ ...job('x'), type: 7 } as unknown as AnyJob], /a job has no type \(its type is number\)/);
  });

  it('job-registry: a job without one of its hooks is refused, naming job and hook', () => {
    for (const hook of ['recordId', 'fetchPage', 'storePage'] as const) {
      refused([job('acme', { [hook]: undefined })], new RegExp(`job 'acme' has no ${hook} function`));
    }
    const action = exchangeRatesJob.downstream;
    assert.ok(action);
    for (const hook of ['submit', 'lookup', 'void'] as const) {
      refused(
        [job('acme', { downstream: { ...action, [hook]: 'not a function' } })],
        new RegExp(`job 'acme': downstream action has no ${hook} function`),
      );
    }
    refused(
      [job('acme', { downstream: { ...action, name: 'Post Journal' } })],
      /downstream action name 'Post Journal' must be/,
    );
  });

  it('job-registry: get() of an unknown type is InvalidInput UNKNOWN_JOB_TYPE listing the known types', () => {
    const registry = createJobRegistry([exchangeRatesJob, fetchRecordsJob]);
    assert.throws(
      () => registry.get('nope'),
      (err: unknown) => {
        assert.ok(err instanceof ApplicationFailure, String(err));
        assert.equal(err.type, 'InvalidInput');
        assert.equal(err.nonRetryable, true);
        assert.equal(detailsOf(err)?.code, 'UNKNOWN_JOB_TYPE');
        assert.match(err.message, /'nope'/);
        assert.match(err.message, /it runs: exchange-rates, fetch-records\)/);
        return true;
      },
    );
    assert.throws(() => createJobRegistry([]).get('x'), /it runs: none/);
  });

  it('job-registry: parseJobConfig gives one line per problem, with its path', () => {
    const withSchema = job('acme', {
      config: z.strictObject({
        account: z.string().min(1),
        limits: z.object({ daily: z.number().int() }),
      }),
    });
    const parsed = parseJobConfig(withSchema, { account: '', limits: { daily: 1.5 }, extra: true });
    assert.equal(parsed.ok, false);
    assert.ok(!parsed.ok);
    assert.equal(parsed.problems.length, 3, parsed.problems.join('\n'));
    for (const line of parsed.problems) assert.doesNotMatch(line, /\n/);
    assert.ok(parsed.problems.some((p) => p.startsWith('config.account: ')));
    assert.ok(parsed.problems.some((p) => p.startsWith('config.limits.daily: ')));
    assert.ok(parsed.problems.some((p) => p.startsWith('config: ') && p.includes('extra')));

    // Defaults of the schema are applied; no config is an empty one.
    assert.deepEqual(parseJobConfig(exchangeRatesJob, undefined), {
      ok: true,
      config: { account: 'fx:rates-imported', counterAccount: 'fx:suspense' },
    });
    // A job without a schema takes only an empty config.
    assert.deepEqual(parseJobConfig(job('plain'), {}), { ok: true, config: {} });
    assert.deepEqual(parseJobConfig(job('plain'), { a: 1 }), {
      ok: false,
      problems: ["config: job 'plain' takes no config"],
    });
    assert.equal(parseJobConfig(job('plain'), [1]).ok, false);
  });
});

describe('a source of a job the worker does not run', () => {
  it('job-registry: its run fails as InvalidInput UNKNOWN_JOB_TYPE with a dead letter, asking the partner nothing', async () => {
    const partner = await startPartner({ port: 0, ratesToken: 'tok-jreg' });
    const kit = await jobTestKit({ jobs: [fetchRecordsJob], secrets: { DF_SECRET_JREG: 'tok-jreg' } });
    try {
      await kit.addSource({
        id: 'jreg-fx',
        job: 'exchange-rates',
        baseUrl: partner.url,
        credentialsRef: 'DF_SECRET_JREG',
      });
      const run = await kit.run('jreg-fx', '2026-10-21');
      assert.equal(run.status, 'dead_lettered');
      assert.equal(run.errorType, 'InvalidInput');
      assert.match(run.row.errorMessage ?? '', /no job of type 'exchange-rates'.*it runs: fetch-records/);
      const letters = await kit.prisma.deadLetter.findMany({ where: { sourceId: 'jreg-fx' } });
      assert.deepEqual(
        letters.map((l) => [l.jobType, l.errorType, l.errorCode]),
        [['exchange-rates', 'InvalidInput', 'UNKNOWN_JOB_TYPE']],
      );
      assert.equal(partner.ledger.entries().length, 0);
    } finally {
      await kit.close();
      await partner.close();
    }
  });
});
