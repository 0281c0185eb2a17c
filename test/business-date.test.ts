// Which business dates a run may be started for: pure functions, the clock passed in.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addDays, checkBusinessDate, dateInTimeZone } from '../contract/business-date.ts';

describe('business-date', () => {
  it('business-date: dateInTimeZone gives the local calendar date on each side of the date line', () => {
    // 11:30 UTC on 14 March: already 15 March in Auckland (UTC+13, daylight time), still 14 March in LA.
    const lateMorningUtc = new Date('2026-03-14T11:30:00Z');
    assert.equal(dateInTimeZone(lateMorningUtc, 'Pacific/Auckland'), '2026-03-15');
    assert.equal(dateInTimeZone(lateMorningUtc, 'America/Los_Angeles'), '2026-03-14');
    assert.equal(dateInTimeZone(lateMorningUtc, 'UTC'), '2026-03-14');
  });

  it('business-date: dateInTimeZone flips exactly at local midnight', () => {
    // Auckland in June is UTC+12 (standard time): local midnight of 15 June is 12:00 UTC on 14 June.
    assert.equal(dateInTimeZone(new Date('2026-06-14T11:59:59.999Z'), 'Pacific/Auckland'), '2026-06-14');
    assert.equal(dateInTimeZone(new Date('2026-06-14T12:00:00.000Z'), 'Pacific/Auckland'), '2026-06-15');
    // Los Angeles in June is UTC-7 (daylight time): local midnight of 15 June is 07:00 UTC on 15 June.
    assert.equal(dateInTimeZone(new Date('2026-06-15T06:59:59.999Z'), 'America/Los_Angeles'), '2026-06-14');
    assert.equal(dateInTimeZone(new Date('2026-06-15T07:00:00.000Z'), 'America/Los_Angeles'), '2026-06-15');
    // Around New Year the two cities are a calendar year apart for a few hours.
    const newYear = new Date('2026-12-31T12:30:00Z');
    assert.equal(dateInTimeZone(newYear, 'Pacific/Auckland'), '2027-01-01');
    assert.equal(dateInTimeZone(newYear, 'America/Los_Angeles'), '2026-12-31');
  });

  it('business-date: addDays crosses month, leap-day and year ends', () => {
    assert.equal(addDays('2026-01-31', 1), '2026-02-01');
    assert.equal(addDays('2026-02-28', 1), '2026-03-01');
    assert.equal(addDays('2024-02-28', 1), '2024-02-29');
    assert.equal(addDays('2024-02-29', 1), '2024-03-01');
    assert.equal(addDays('2026-12-31', 1), '2027-01-01');
    assert.equal(addDays('2027-01-01', -1), '2026-12-31');
    assert.equal(addDays('2026-03-01', -1), '2026-02-28');
    assert.equal(addDays('2026-03-14', 0), '2026-03-14');
    assert.equal(addDays('2026-12-25', 10), '2027-01-04');
  });

  it('business-date: with maxFutureDays 0 today is allowed and tomorrow is refused naming today as the latest', () => {
    const opts = { now: new Date('2026-11-29T10:00:00Z'), timeZone: 'UTC', maxFutureDays: 0 };
    assert.deepEqual(checkBusinessDate('2026-11-29', opts), { ok: true });
    assert.deepEqual(checkBusinessDate('2020-01-01', opts), { ok: true });
    const tomorrow = checkBusinessDate('2026-11-30', opts);
    assert.equal(tomorrow.ok, false);
    assert.match(
      !tomorrow.ok ? tomorrow.reason : '',
      /date 2026-11-30 is in the future: the latest allowed is 2026-11-29 \(UTC, max 0 day/,
    );
  });

  it('business-date: with maxFutureDays 1 tomorrow is allowed and the day after is refused', () => {
    const opts = { now: new Date('2026-12-31T10:00:00Z'), timeZone: 'UTC', maxFutureDays: 1 };
    assert.deepEqual(checkBusinessDate('2027-01-01', opts), { ok: true });
    const dayAfter = checkBusinessDate('2027-01-02', opts);
    assert.equal(dayAfter.ok, false);
    assert.match(!dayAfter.ok ? dayAfter.reason : '', /the latest allowed is 2027-01-01 /);
  });

  it("business-date: 'today' is the source's today, so the same instant allows a date in Auckland and refuses it in LA", () => {
    const now = new Date('2026-03-14T11:30:00Z'); // 15 March in Auckland, 14 March in LA
    const auckland = checkBusinessDate('2026-03-15', { now, timeZone: 'Pacific/Auckland', maxFutureDays: 0 });
    const la = checkBusinessDate('2026-03-15', { now, timeZone: 'America/Los_Angeles', maxFutureDays: 0 });
    assert.deepEqual(auckland, { ok: true });
    assert.equal(la.ok, false);
    assert.match(!la.ok ? la.reason : '', /latest allowed is 2026-03-14 \(America\/Los_Angeles/);
  });

  it('business-date: checkBusinessDate refuses malformed and impossible dates before applying the policy', () => {
    const opts = { now: new Date('2026-11-29T10:00:00Z'), timeZone: 'UTC', maxFutureDays: 366 };
    for (const date of ['2026-02-30', 'yesterday', '2026-1-1', '']) {
      assert.deepEqual(checkBusinessDate(date, opts), {
        ok: false,
        reason: `invalid date '${date}': expected YYYY-MM-DD`,
      });
    }
  });
});
