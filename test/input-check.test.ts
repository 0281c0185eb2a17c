// The workflow-boundary check of fetch-records inputs (workflows/input-check.ts; R2 "validated
// payload", R7 "bad input stops at once"), as a pure function: every input the project's own
// starters and continue-as-new ever wrote passes (the recorded histories are the evidence), the
// inputs a Web UI or CLI start can hand it are refused naming the field, and no input — however
// large, deep or strange — makes it throw or echo a value.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { checkFetchInput } from '../workflows/input-check.ts';
import { MAX_PAGE_SIZE } from '../contract/input-limits.ts';
import { readFixtures } from './helpers/history-fixtures.ts';

const DATE = '2026-06-06';
const ID = `fetch/fetch-records/acme/${DATE}`;
const valid = {
  jobType: 'fetch-records',
  sourceId: 'acme',
  businessDate: DATE,
  correlationId: 'c-1',
  requestedBy: 'cli',
};
const resume = {
  jobType: 'fetch-records',
  fetchRunId: '1199265b-1a9f-4f90-9bd8-5bde585a2ac5',
  leaseToken: 'b3ef1a2e-127a-4ad9-a11e-acbf7d429918',
  cursor: 'djE6MjE',
  pagesStored: 2,
  recordsStored: 20,
  pageSize: 10,
  retryPolicy: 'partnerHttp',
  round: 1,
  submitSummary: false,
};
const fresh = { workflowId: ID };
const continued = { workflowId: ID, continuedFromExecutionRunId: 'b3ef1a2e-0000-4ad9-a11e-acbf7d429918' };

function refused(input: unknown, facts: Parameters<typeof checkFetchInput>[1] = fresh) {
  const check = checkFetchInput(input, facts);
  assert.equal(check.ok, false, `expected a refusal of ${JSON.stringify(input)?.slice(0, 200)}`);
  if (check.ok) throw new Error('unreachable');
  return check;
}

void describe('input-check: the workflow boundary', () => {
  void it('every fetchRecordsWorkflow input in the recorded histories passes (the runs open at a deploy)', async () => {
    let checked = 0;
    for (const [file, fixture] of await readFixtures()) {
      if (fixture.workflowType !== 'fetchRecordsWorkflow') continue;
      // The recordings of refused starts hold inputs the check refuses, as they must.
      if (file.startsWith('fetch-records-invalid-input')) continue;
      const started = fixture.history.events[0]?.workflowExecutionStartedEventAttributes as {
        input: { payloads: { data: string }[] };
        continuedExecutionRunId?: string;
      };
      const input: unknown = JSON.parse(Buffer.from(started.input.payloads[0]!.data, 'base64').toString());
      const check = checkFetchInput(input, {
        workflowId: fixture.workflowId,
        continuedFromExecutionRunId: started.continuedExecutionRunId,
      });
      assert.deepEqual(check, { ok: true }, file);
      checked++;
    }
    assert.ok(checked >= 10, `${checked} fetch-records fixtures checked`);
  });

  void it('a valid start, a Schedule-suffixed workflow id and a continued execution with resume state pass', () => {
    assert.deepEqual(checkFetchInput(valid, fresh), { ok: true });
    assert.deepEqual(checkFetchInput({ ...valid, pageSize: MAX_PAGE_SIZE, pagesPerExecution: 1 }, fresh), {
      ok: true,
    });
    assert.deepEqual(checkFetchInput(valid, { workflowId: `${ID}-2026-11-29T02:00:00Z` }), { ok: true });
    assert.deepEqual(checkFetchInput({ ...valid, resume }, continued), { ok: true });
    const isolated = { ...resume, partnerQueue: 'durable-fetch-ds-partner_a', partnerWeight: 2.5 };
    assert.deepEqual(checkFetchInput({ ...valid, resume: isolated }, continued), { ok: true });
    assert.deepEqual(checkFetchInput({ ...valid, resume: { ...resume, localFetch: true } }, continued), {
      ok: true,
    });
    // Written before jobs were plug-ins: no job type anywhere, the workflow id's is taken.
    const { jobType: _, ...legacy } = valid;
    assert.deepEqual(checkFetchInput(legacy, fresh), { ok: true });
  });

  void it('each input a bypassing start can send is refused, naming the field and the rule', () => {
    const cases: [unknown, string, RegExp][] = [
      [{ ...valid, pagesPerExecution: 'abc' }, 'pagesPerExecution', /integer 1\.\.1000/],
      [{ ...valid, pageSize: 1e9 }, 'pageSize', /integer 1\.\.1000/],
      [{ ...valid, pageSize: 0 }, 'pageSize', /integer/],
      [{ ...valid, pageSize: 2.5 }, 'pageSize', /integer/],
      [{ ...valid, sourceId: 'acme\u0000' }, 'sourceId', /source id/],
      [{ ...valid, correlationId: 'x'.repeat(1024 * 1024) }, 'correlationId', /1\.\.128/],
      [{ ...valid, requestedBy: 'mallory' }, 'requestedBy', /one of app-client/],
      [{ ...valid, scheduledAt: 'yesterday' }, 'scheduledAt', /ISO 8601/],
      [{ ...valid, jobType: 7 }, 'jobType', /job type/],
      [{ ...valid, businessDate: '2026-02-30' }, 'businessDate', /calendar date/],
      [{ ...valid, sourceId: "acme'; DROP TABLE fetch_run; --" }, 'sourceId', /source id/],
      [{ ...valid, extra: 1 }, 'extra', /not a field/],
      [{ ...valid, resume }, 'resume', /continue-as-new only/],
      [null, '(input)', /JSON object/],
      [[valid], '(input)', /JSON object/],
    ];
    for (const [input, field, rule] of cases) {
      const check = refused(input);
      assert.equal(check.problems[0]?.field, field, JSON.stringify(check.problems));
      assert.match(check.message, rule);
      assert.equal(check.key?.sourceId, 'acme', 'the workflow id names the key');
    }
  });

  void it('a workflow id of another key, or of none, is refused; only an exact business-key id names a key', () => {
    const other = refused(valid, { workflowId: `fetch/fetch-records/other/${DATE}` });
    assert.equal(other.problems[0]?.field, 'workflowId');
    assert.equal(other.key?.sourceId, 'other');
    const none = refused(valid, { workflowId: 'anything-else' });
    assert.equal(none.problems[0]?.field, 'workflowId');
    assert.equal(none.key, undefined);
    const suffixed = refused({ ...valid, pageSize: 0 }, { workflowId: `${ID}-2026-11-29T02:00:00Z` });
    assert.equal(suffixed.key, undefined, 'a suffixed id is not the key’s own workflow id');
    refused({ ...valid, jobType: 'http' }, fresh);
    // An input without a job type takes the id's: an id without one names no key at all.
    const { jobType: _, ...legacy } = valid;
    for (const workflowId of ['anything-else', `fetch/Bad/acme/${DATE}`, `fetch//acme/${DATE}`]) {
      assert.equal(refused(legacy, { workflowId }).problems[0]?.field, 'workflowId', workflowId);
    }
  });

  void it('forged or broken resume state in a continued execution is refused field by field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ...resume, leaseToken: 'x' }, 'resume.leaseToken'],
      [{ ...resume, cursor: '' }, 'resume.cursor'],
      [{ ...resume, cursor: 'c'.repeat(1025) }, 'resume.cursor'],
      [{ ...resume, pagesStored: -1 }, 'resume.pagesStored'],
      [{ ...resume, retryPolicy: 'yolo' }, 'resume.retryPolicy'],
      [{ ...resume, jobType: 'http' }, 'resume.jobType'],
      [{ ...resume, downstreamAction: 'DROP' }, 'resume.downstreamAction'],
      [{ ...resume, smuggled: true }, 'resume.smuggled'],
      // R8: page fetches may move only to a downstream's queue, with a weight the settings allow.
      [{ ...resume, partnerQueue: 'someone-elses-queue' }, 'resume.partnerQueue'],
      [{ ...resume, partnerQueue: 'q-ds-Bad Name' }, 'resume.partnerQueue'],
      [{ ...resume, partnerWeight: 0 }, 'resume.partnerWeight'],
      [{ ...resume, partnerWeight: 1001 }, 'resume.partnerWeight'],
      [{ ...resume, localFetch: 'yes' }, 'resume.localFetch'],
    ];
    for (const [state, field] of cases) {
      assert.equal(refused({ ...valid, resume: state }, continued).problems[0]?.field, field);
    }
    assert.equal(refused({ ...valid, resume: 5 }, continued).problems[0]?.field, 'resume');
  });

  void it('property: any JSON input is checked without throwing, and a refusal never echoes a value', () => {
    const marker = fc.string({ minLength: 1, maxLength: 8 }).map((s) => `⟦${s}⟧`);
    const value = fc.oneof(
      fc.jsonValue({ maxDepth: 6 }),
      marker,
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.constantFrom("'; DROP TABLE fetch_run; --", '\u0000', 'x'.repeat(5000), -0, 1e308),
    );
    const input = fc.oneof(
      value,
      fc.record(
        { ...Object.fromEntries(Object.keys(valid).map((k) => [k, value])), resume: value },
        {
          requiredKeys: [],
        },
      ),
      fc.dictionary(fc.string({ maxLength: 60 }), value, { maxKeys: 12 }),
      fc
        .constant(valid)
        .chain((v) =>
          fc
            .record({ key: fc.constantFrom(...Object.keys(v), 'pageSize', 'pagesPerExecution'), value })
            .map(({ key, value }) => ({ ...v, [key]: value })),
        ),
    );
    fc.assert(
      fc.property(input, fc.boolean(), (given, isContinued) => {
        const check = checkFetchInput(given, isContinued ? continued : fresh);
        if (check.ok) return;
        assert.ok(check.message.length <= 600, `message of ${check.message.length} characters`);
        assert.doesNotMatch(check.message, /⟦|DROP TABLE|x{100}/);
        assert.ok(!check.message.includes(String.fromCharCode(0)), 'no NUL byte in the message');
      }),
      { seed: 20261201, numRuns: 3000 },
    );
  });
});
