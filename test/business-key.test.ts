// The business key and what derives from it: pure functions, no services.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type BusinessKey,
  idempotencyKeyFor,
  isBusinessDate,
  isSourceId,
  parseWorkflowId,
  workflowIdFor,
} from '../contract/business-key.ts';

const KEY: BusinessKey = { jobType: 'fetch-records', sourceId: 'acme-eu_2', businessDate: '2026-03-14' };

describe('business-key', () => {
  it('business-key: isBusinessDate accepts real calendar dates, including 29 February of leap years', () => {
    for (const date of ['2026-01-01', '2026-12-31', '2024-02-29', '2000-02-29', '1999-12-31', '2026-04-30']) {
      assert.equal(isBusinessDate(date), true, date);
    }
  });

  it('business-key: isBusinessDate rejects days that are not on the calendar', () => {
    // 2026 and 1900 are not leap years (1900: divisible by 100, not by 400).
    for (const date of [
      '2026-02-30',
      '2026-02-29',
      '1900-02-29',
      '2026-04-31',
      '2026-13-01',
      '2026-00-10',
      '2026-01-00',
    ]) {
      assert.equal(isBusinessDate(date), false, date);
    }
  });

  it('business-key: isBusinessDate rejects anything not written YYYY-MM-DD', () => {
    for (const date of [
      'yesterday',
      '',
      '2026-3-14',
      '2026-03-14T00:00:00Z',
      ' 2026-03-14',
      '2026/03/14',
      '14-03-2026',
    ]) {
      assert.equal(isBusinessDate(date), false, JSON.stringify(date));
    }
  });

  it('business-key: isSourceId keeps ids to lowercase letters, digits, - and _, starting alphanumeric, at most 63', () => {
    for (const id of ['demo', 'a', '0day', 'acme-eu_2', 'x'.repeat(63)])
      assert.equal(isSourceId(id), true, id);
    for (const id of [
      '',
      'Demo',
      '-demo',
      '_demo',
      'a/b',
      'a.b',
      'a b',
      'a:b',
      '../etc',
      'x'.repeat(64),
      'é',
    ]) {
      assert.equal(isSourceId(id), false, JSON.stringify(id));
    }
  });

  it('business-key: workflowIdFor is fetch/<jobType>/<sourceId>/<date> and parseWorkflowId inverts it', () => {
    const id = workflowIdFor(KEY);
    assert.equal(id, 'fetch/fetch-records/acme-eu_2/2026-03-14');
    assert.deepEqual(parseWorkflowId(id), KEY);
    // Any registered job's ids parse alike: the job type is a plug-in's name, not a fixed list.
    const fx = { jobType: 'exchange-rates', sourceId: 'demo-fx', businessDate: '2026-11-20' };
    assert.deepEqual(parseWorkflowId(workflowIdFor(fx)), fx);
  });

  it('business-key: parseWorkflowId rejects ids it did not make', () => {
    for (const id of [
      'fetch/fetch-records/acme/2026-03-14/extra',
      'fetch/fetch-records/acme',
      'other/fetch-records/acme/2026-03-14',
      'fetch/Not_A_Job/acme/2026-03-14', // job types are lower case, digits and -
      'fetch/fetch-records/Acme/2026-03-14',
      'fetch/fetch-records/acme/2026-02-30',
      // A Schedule's action id carries a timestamp suffix: not a business-key workflow id.
      'fetch/fetch-records/acme/2026-03-14-2026-11-29T02:00:00Z',
      '',
    ]) {
      assert.equal(parseWorkflowId(id), undefined, id);
    }
  });

  it('business-key: idempotency keys derive from the business key and the step only', () => {
    assert.equal(idempotencyKeyFor(KEY), 'fetch-records:acme-eu_2:2026-03-14');
    assert.equal(idempotencyKeyFor(KEY, 'complete'), 'fetch-records:acme-eu_2:2026-03-14:complete');
    assert.equal(idempotencyKeyFor(KEY, 'page', 0), 'fetch-records:acme-eu_2:2026-03-14:page:0');
    assert.equal(idempotencyKeyFor(KEY, 'page', 12), 'fetch-records:acme-eu_2:2026-03-14:page:12');
    // Same inputs, same key: an equal business key built elsewhere presents the same key.
    assert.equal(idempotencyKeyFor({ ...KEY }, 'page', 3), idempotencyKeyFor(KEY, 'page', 3));
    assert.notEqual(
      idempotencyKeyFor({ ...KEY, businessDate: '2026-03-15' }, 'page', 3),
      idempotencyKeyFor(KEY, 'page', 3),
    );
  });
});
