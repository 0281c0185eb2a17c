// Incremental windows, the pure parts (issue 38 part 2): cursor values and their order, the window
// a run reads, and what the http job's config refuses when a source is added.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compareWatermarks,
  highestValue,
  watermarkText,
  windowFor,
} from '../activities/job-api/watermark.ts';
import { httpJobConfigSchema } from '../jobs/http/config.ts';
import { cursorValue, watermarkSpecOf } from '../jobs/http/incremental.ts';
import { render, renderJson, type TemplateValues } from '../jobs/http/template.ts';

const spec = { kind: 'timestamp' as const, start: '2026-01-01T00:00:00.000Z', lookback: 60_000 };
const run = { businessDate: '2026-10-02', timezone: 'Europe/Paris' };
const NOW = new Date('2026-10-02T08:00:00Z');

void describe('cursor values', () => {
  it('timestamps need an offset (text without one is read in no zone for sure) and are kept in UTC to the millisecond', () => {
    assert.equal(watermarkText('timestamp', '2026-10-01T10:00:00Z'), '2026-10-01T10:00:00.000Z');
    assert.equal(watermarkText('timestamp', '2026-10-01T12:00:00+02:00'), '2026-10-01T10:00:00.000Z');
    assert.equal(watermarkText('timestamp', '2026-10-01 10:00:00.123456Z'), '2026-10-01T10:00:00.123Z');
    assert.equal(watermarkText('timestamp', '2026-10-01T10:00:00'), undefined);
    assert.equal(watermarkText('timestamp', '2026-10-01'), undefined);
    assert.equal(watermarkText('timestamp', 1_790_000_000), undefined, 'a bare number is no instant');
    assert.equal(watermarkText('timestamp', new Date(Number.NaN)), undefined);
  });

  it('integers: safe numbers, bigints and digits, exact beyond 2^53 when given as text', () => {
    assert.equal(watermarkText('number', 42), '42');
    assert.equal(watermarkText('number', '9007199254740993'), '9007199254740993');
    assert.equal(watermarkText('number', 9007199254740993n), '9007199254740993');
    assert.equal(watermarkText('number', 2 ** 53 + 2), undefined, 'a number JSON already rounded');
    assert.equal(watermarkText('number', 1.5), undefined);
    assert.equal(watermarkText('number', 'abc'), undefined);
    assert.ok(compareWatermarks('number', '9007199254740993', '9007199254740992') > 0);
    assert.ok(compareWatermarks('number', '10', '9') > 0, 'numbers, not text');
  });

  it('epoch formats become instants', () => {
    assert.deepEqual(cursorValue(1_790_000_000, 'epoch_seconds'), new Date(1_790_000_000_000));
    assert.deepEqual(cursorValue('1790000000123', 'epoch_millis'), new Date(1_790_000_000_123));
    assert.equal(cursorValue('soon', 'epoch_seconds'), undefined);
  });

  it('the highest value of a page, and the first record without one', () => {
    const s = watermarkSpecOf({
      cursorField: [['updated_at']].flat(),
      format: 'iso',
      start: '2026-01-01T00:00:00Z',
      lookback: 0,
      ordered: false,
    })!;
    const rec = (updated_at?: string) => ({ record: updated_at === undefined ? {} : { updated_at } });
    assert.deepEqual(
      highestValue(s, [
        rec('2026-10-01T10:00:00Z'),
        rec('2026-10-01T12:00:00Z'),
        rec('2026-10-01T11:00:00Z'),
      ]),
      {
        highest: '2026-10-01T12:00:00.000Z',
        missing: undefined,
      },
    );
    assert.equal(highestValue(s, [rec('2026-10-01T10:00:00Z'), rec()]).missing, 1);
    assert.deepEqual(highestValue(s, []), { highest: undefined, missing: undefined });
  });
});

void describe('the window a run reads', () => {
  it('a first run reads from the start until now, and is the head', () => {
    assert.deepEqual(windowFor(spec, undefined, run, NOW), {
      kind: 'timestamp',
      since: '2026-01-01T00:00:00.000Z',
      until: '2026-10-02T08:00:00.000Z',
      head: true,
    });
  });

  it("a run of the watermark's date or later reads from the watermark less the lookback", () => {
    const w = { kind: 'timestamp', value: '2026-10-01T23:59:30.000Z', businessDate: '2026-10-02' };
    const got = windowFor(spec, w, run, NOW);
    assert.equal(got.since, '2026-10-01T23:58:30.000Z');
    assert.equal(got.head, true);
  });

  it('a run of an older date reads its own day (in its timezone) less the lookback, and is not the head', () => {
    const w = { kind: 'timestamp', value: '2026-10-05T00:00:00.000Z', businessDate: '2026-10-05' };
    assert.deepEqual(windowFor(spec, w, run, NOW), {
      kind: 'timestamp',
      since: '2026-10-01T21:59:00.000Z',
      until: '2026-10-02T22:00:00.000Z',
      head: false,
    });
    const n = { kind: 'number', start: '100', lookback: 5 } as const;
    assert.deepEqual(windowFor(n, { kind: 'number', value: '500', businessDate: '2026-10-05' }, run, NOW), {
      kind: 'number',
      since: '100',
      until: null,
      head: false,
    });
  });

  it('an integer cursor: the watermark less the lookback, no upper bound', () => {
    const n = { kind: 'number', start: '0', lookback: 5 } as const;
    assert.deepEqual(windowFor(n, { kind: 'number', value: '500', businessDate: '2026-10-01' }, run, NOW), {
      kind: 'number',
      since: '495',
      until: null,
      head: true,
    });
  });

  it('a watermark of another kind (the config changed) counts as none', () => {
    const w = { kind: 'number', value: '500', businessDate: '2026-10-05' };
    const got = windowFor(spec, w, run, NOW);
    assert.equal(got.since, spec.start);
    assert.equal(got.head, true);
  });
});

void describe('window placeholders', () => {
  const values = (window: TemplateValues['window']): TemplateValues => ({
    date: '2026-10-02',
    timeZone: 'UTC',
    sourceId: 's',
    cursor: null,
    page: null,
    offset: null,
    limit: 10,
    window,
  });
  const ts = {
    kind: 'timestamp' as const,
    since: '2026-10-01T10:00:00.500Z',
    until: '2026-10-02T08:00:00.000Z',
  };

  it('render in the forms a partner asks for; epoch seconds round down (a wider window, never a narrower one)', () => {
    assert.equal(
      render('{since}|{sinceEpoch}|{sinceEpochMs}|{untilEpoch}', values(ts)),
      '2026-10-01T10:00:00.500Z|1790848800|1790848800500|1790928000',
    );
    assert.deepEqual(renderJson({ gte: '{sinceEpoch}', lt: '{until}' }, values(ts)), {
      gte: 1_790_848_800,
      lt: '2026-10-02T08:00:00.000Z',
    });
    assert.deepEqual(renderJson({ gt: '{since}' }, values({ kind: 'number', since: '495', until: null })), {
      gt: 495,
    });
  });
});

void describe('incremental config, checked when a source is added', () => {
  const base = {
    request: { path: '/tickets', query: { start_time: '{sinceEpoch}' } },
    auth: { type: 'none' },
    incremental: { cursorField: 'updated_at', start: '2026-01-01T00:00:00Z' },
  };
  const problems = (config: unknown) => {
    const r = httpJobConfigSchema.safeParse(config);
    return r.success ? [] : r.error.issues.map((i) => i.message);
  };

  it('a valid one parses, with its defaults', () => {
    const r = httpJobConfigSchema.parse(base);
    assert.deepEqual(r.incremental, {
      cursorField: [['updated_at']].flat(),
      format: 'iso',
      start: '2026-01-01T00:00:00Z',
      lookback: 0,
      ordered: false,
    });
  });

  it('refuses a request that sends no window, a window without incremental, a start not of the format, epoch placeholders on an integer cursor', () => {
    assert.match(problems({ ...base, request: { path: '/tickets' } }).join(), /must send its window/);
    assert.match(
      problems({ request: base.request, auth: base.auth }).join(),
      /\{sinceEpoch\} needs an incremental config/,
    );
    assert.match(
      problems({ ...base, incremental: { ...base.incremental, start: '2026-01-01' } }).join(),
      /ISO-8601 instant with its offset/,
    );
    assert.match(
      problems({ ...base, incremental: { ...base.incremental, format: 'integer', start: 0 } }).join(),
      /\{sinceEpoch\} needs a timestamp cursor/,
    );
    assert.deepEqual(
      problems({
        ...base,
        request: { path: '/t', query: { after: '{since}' } },
        incremental: { cursorField: 'id', format: 'integer', start: 0 },
      }),
      [],
    );
  });
});
