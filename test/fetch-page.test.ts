// fetchPage against partners that misbehave, on real PostgreSQL with a real activity context
// (MockActivityEnvironment) and a stub HTTP client returning the malformed pages.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { HttpClient } from '../activities/http.ts';
import { createActivities } from '../activities/index.ts';
import { setBreaker } from '../db/retry/breaker.ts';
import { carryCursor } from '../activities/pages/carried-pages.ts';
import { MAX_CURSOR_LENGTH, MAX_RECORDS_PER_RESPONSE } from '../activities/job-runtime.ts';
import type { FetchPageResult } from '../contract/types.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';

const DATE = '2026-06-01';
let db: TestDatabase;

before(async () => {
  db = await useTestDatabase();
});
after(async () => db?.drop());

/** An HTTP client that answers every partner call with `page` and counts the calls. */
function stubHttp(page: unknown): HttpClient & { calls: number } {
  const http = {
    calls: 0,
    getJson: () => {
      http.calls++;
      return Promise.resolve(page);
    },
    postJson: () => Promise.reject(new Error('fetchPage never POSTs')),
    readJson: () => Promise.reject(new Error('the demo job reads with getJson')),
    readResponse: () => Promise.reject(new Error('the demo job reads with getJson')),
    options: { connectTimeoutMs: 1_000, responseTimeoutMs: 1_000 },
    close: () => Promise.resolve(),
  };
  return http;
}

/** A new source `sourceId` whose partner is `http`, and a claimed run of it. */
async function claimed(sourceId: string, http: HttpClient) {
  await createSource(db.prisma, sourceId, 'http://127.0.0.1:9');
  const acts = createActivities(testDeps(db.prisma, { http }));
  const claim = await acts.claimRun({
    sourceId,
    businessDate: DATE,
    workflowId: `fetch/fetch-records/${sourceId}/${DATE}`,
    workflowRunId: 'r1',
    correlationId: 'c',
    requestedBy: 'test',
    scheduledAt: `${DATE}T00:00:00Z`,
  });
  if (claim.outcome !== 'claimed') throw new Error(`not claimed: ${claim.outcome}`);
  return { acts, claim };
}

async function fetchWith(
  sourceId: string,
  http: HttpClient,
  leaseToken?: string,
  afterClaim?: () => Promise<unknown>,
): Promise<unknown> {
  const { acts, claim } = await claimed(sourceId, http);
  await afterClaim?.();
  const input = {
    fetchRunId: claim.fetchRunId,
    leaseToken: leaseToken ?? claim.leaseToken,
    sourceId,
    businessDate: DATE,
    pageNo: 0,
    cursor: 'c-1',
    pageSize: 100,
  };
  try {
    return await new MockActivityEnvironment().run(acts.fetchPage, input);
  } catch (err) {
    return err;
  }
}

/** Staged pages of `sourceId` (keys are `fetch-records:<source>:…`). */
function stagedPages(sourceId: string): Promise<number> {
  return db.prisma.fetchedPage.count({ where: { key: { startsWith: `fetch-records:${sourceId}:` } } });
}

function failureCode(err: unknown): string {
  assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
  return `${err.type}/${(err.details?.[0] as { code: string }).code}`;
}

void describe('fetch-page', () => {
  // R2: the source is re-read at every step (in the statement that renews the lease), so an
  // operator's change after the claim stops the next page before any partner call.
  for (const [change, code] of [
    [{ enabled: false }, 'SOURCE_DISABLED'],
    [{ enabled: false, removedAt: new Date(), removedBy: 'test' }, 'SOURCE_REMOVED'],
  ] as const) {
    void it(`a source changed after the claim (${code}) fails the page before any partner call`, async () => {
      const id = `fp-${code.toLowerCase().replace('_', '-')}`;
      const http = stubHttp({ records: [{ id: 'x1' }], nextCursor: null });
      const disable = () => db.prisma.source.update({ where: { id }, data: change });
      assert.equal(failureCode(await fetchWith(id, http, undefined, disable)), `PermissionDenied/${code}`);
      assert.equal(http.calls, 0);
      assert.equal(await stagedPages(id), 0);
    });
  }

  // R8: every partner call of a page is admitted by the downstream's breaker once, before it is
  // made; the admission of each call after the first rides on the append of the response before it.
  /** Answers five responses of 20 records (cursor c-1 … c-5, then none); `onCall(n)` before the n-th. */
  function fivePages(onCall: (n: number) => Promise<unknown> = () => Promise.resolve()) {
    const http = stubHttp(undefined);
    http.getJson = async () => {
      const n = ++http.calls;
      await onCall(n);
      const records = Array.from({ length: 20 }, (_, i) => ({ id: `r${n}-${i}` }));
      return { records, nextCursor: n < 5 ? `c-${n + 1}` : null };
    };
    return http;
  }
  const callsCounted = async (downstream: string) => {
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT COALESCE(sum(calls), 0)::int AS n FROM downstream_calls WHERE downstream = ${downstream}`;
    return row?.n ?? 0;
  };

  void it('a page of five partner calls is admitted by the breaker five times, once a call', async () => {
    const http = fivePages();
    const page = await fetchWith('fp-admit', http);
    assert.deepEqual(page, { recordCount: 100, nextCursor: null });
    assert.equal(http.calls, 5);
    assert.equal(await callsCounted('default.fp-admit'), 5);
  });

  void it('a breaker opened between two partner calls of a page refuses the next one; what came before stays staged', async () => {
    const id = 'fp-admit-open';
    const http = fivePages(async (n) => {
      // While the second call is out: its answer's append then asks for the third call.
      if (n === 2) await setBreaker(db.prisma, `default.${id}`, 'open', { actor: 'test', reason: 'test' });
    });
    assert.equal(failureCode(await fetchWith(id, http)), 'CircuitOpen/BREAKER_FORCED_OPEN');
    assert.equal(http.calls, 2, 'the third call was never made');
    const [staged] = await db.prisma.fetchedPage.findMany({
      where: { key: { startsWith: `fetch-records:${id}:` } },
    });
    assert.equal(staged?.recordCount, 40, 'both answers staged');
    assert.equal(await callsCounted(`default.${id}`), 2);
  });

  void it('a partner cursor that does not advance fails the page as InvalidResponse instead of looping', async () => {
    const http = stubHttp({ records: [{ id: 'x1' }], nextCursor: 'c-1' });
    assert.equal(failureCode(await fetchWith('fp-stuck', http)), 'InvalidResponse/CURSOR_NOT_ADVANCING');
    assert.equal(http.calls, 1);
  });

  void it('an empty page that still has a next cursor fails as InvalidResponse', async () => {
    const http = stubHttp({ records: [], nextCursor: 'c-2' });
    assert.equal(failureCode(await fetchWith('fp-empty', http)), 'InvalidResponse/EMPTY_PAGE_WITH_CURSOR');
  });

  void it('a page that does not match the partner contract fails as InvalidResponse, naming where and which rule, not the value', async () => {
    const http = stubHttp({ items: [] });
    assert.equal(failureCode(await fetchWith('fp-shape', http)), 'InvalidResponse/PAGE_SHAPE');
    const longId = `secret-${'x'.repeat(200)}`;
    const err = await fetchWith('fp-shape-id', stubHttp({ records: [{ id: longId }], nextCursor: null }));
    assert.equal(failureCode(err), 'InvalidResponse/PAGE_SHAPE');
    const message = (err as Error).message;
    assert.match(message, /records\.0\.id: Too big: expected string to have <=200 characters/);
    assert.ok(!message.includes('secret-'), message);
  });

  void it(`a response of more than ${MAX_RECORDS_PER_RESPONSE} records fails as InvalidResponse TOO_MANY_RECORDS, staging nothing; more than the limit asked for is stored over the next pages`, async () => {
    const records = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${i}` }));
    const over = stubHttp({ records: records(MAX_RECORDS_PER_RESPONSE + 1), nextCursor: null });
    assert.equal(failureCode(await fetchWith('fp-many', over)), 'InvalidResponse/TOO_MANY_RECORDS');
    assert.equal(over.calls, 1, 'not retried within the attempt');
    assert.equal(await stagedPages('fp-many'), 0);
    // The page asks for min(partnerPageLimit 50, pageSize 100) = 50 records and takes 130: 100 on
    // the page, the last 30 staged as page 1 (activities/pages/carried-pages.ts), the partner asked once.
    const more = stubHttp({ records: records(130), nextCursor: null });
    assert.deepEqual(await fetchWith('fp-many-ok', more), {
      recordCount: 100,
      nextCursor: carryCursor(null, 1),
    });
    assert.equal(more.calls, 1);
    assert.equal(await stagedPages('fp-many-ok'), 2);
  });

  void it(`a next cursor longer than ${MAX_CURSOR_LENGTH} characters fails as InvalidResponse CURSOR_TOO_LONG, staging nothing`, async () => {
    const long = stubHttp({ records: [{ id: 'x1' }], nextCursor: 'c'.repeat(MAX_CURSOR_LENGTH + 1) });
    assert.equal(failureCode(await fetchWith('fp-cursor', long)), 'InvalidResponse/CURSOR_TOO_LONG');
    assert.equal(await stagedPages('fp-cursor'), 0);
    // At the maximum the cursor is taken (and this stub then repeats it, which stops the page).
    const longest = stubHttp({ records: [{ id: 'x1' }], nextCursor: 'c'.repeat(MAX_CURSOR_LENGTH) });
    assert.equal(
      failureCode(await fetchWith('fp-cursor-ok', longest)),
      'InvalidResponse/CURSOR_NOT_ADVANCING',
    );
    assert.equal(longest.calls, 2);
  });

  void it('a record or cursor holding a NUL character fails as InvalidResponse NUL_CHARACTER, staging nothing', async () => {
    const nul = String.fromCharCode(0);
    const pages = [
      { records: [{ id: 'x1', note: `a${nul}b` }], nextCursor: null },
      { records: [{ id: `x${nul}1` }], nextCursor: null },
      { records: [{ id: 'x1', deep: [[{ [`k${nul}`]: 1 }]] }], nextCursor: null },
      { records: [{ id: 'x1' }], nextCursor: `c${nul}` },
    ];
    for (const [n, page] of pages.entries()) {
      assert.equal(
        failureCode(await fetchWith(`fp-nul-${n}`, stubHttp(page))),
        'InvalidResponse/NUL_CHARACTER',
      );
      assert.equal(await stagedPages(`fp-nul-${n}`), 0);
    }
  });

  void it('an attempt without the current lease fails as LeaseLost before calling the partner', async () => {
    const http = stubHttp({ records: [{ id: 'x1' }], nextCursor: null });
    const stale = '00000000-0000-4000-8000-000000000001';
    assert.equal(failureCode(await fetchWith('fp-lease', http, stale)), 'LeaseLost/LEASE_LOST');
    assert.equal(http.calls, 0);
    assert.equal(await stagedPages('fp-lease'), 0);
  });
});

void describe('fetch-page: a page this claim stored already', () => {
  void it('asked again (an execution reset to before its store) is given back as stored, without calling the partner; a stale lease still gets LeaseLost', async () => {
    const sourceId = 'fp-stored';
    const pages = [
      { records: [{ id: 'a1' }, { id: 'a2' }], nextCursor: 'c-2' },
      { records: [{ id: 'b1' }], nextCursor: null },
    ];
    const http = stubHttp(undefined);
    http.getJson = () => Promise.resolve(pages[http.calls++]);
    const { acts, claim } = await claimed(sourceId, http);
    const run = { fetchRunId: claim.fetchRunId, leaseToken: claim.leaseToken, sourceId, businessDate: DATE };
    const env = new MockActivityEnvironment();
    const fetchAt = (
      pageNo: number,
      cursor: string | null,
      leaseToken = claim.leaseToken,
    ): Promise<FetchPageResult> =>
      env.run(acts.fetchPage, { ...run, leaseToken, pageNo, cursor, pageSize: 2 });
    for (const [pageNo, cursor] of [
      [0, null],
      [1, 'c-2'],
    ] as const) {
      const page = await fetchAt(pageNo, cursor);
      await acts.storePage({ ...run, pageNo, ...page });
    }
    assert.equal(http.calls, 2);

    assert.deepEqual(await fetchAt(0, null), { recordCount: 2, nextCursor: 'c-2' });
    assert.deepEqual(await fetchAt(1, 'c-2'), { recordCount: 1, nextCursor: null });
    assert.equal(http.calls, 2, 'the partner is not asked again');
    const again = await acts.storePage({ ...run, pageNo: 0, recordCount: 2, nextCursor: 'c-2' });
    assert.deepEqual([again.replayed, again.recordCount, 'nextCursor' in again], [true, 2, false]);
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), 3);

    const stale = '00000000-0000-4000-8000-000000000002';
    assert.equal(failureCode(await fetchAt(0, null, stale).catch((e: unknown) => e)), 'LeaseLost/LEASE_LOST');
  });
});

void describe('fetch-page: a page fetched again from the start', () => {
  // The cursors a staged page reached are the run's loop memory; once the page is gone (expired, or
  // dropped because it started elsewhere) they must be forgotten, or fetching the page again would
  // meet its own cursors and fail as a loop.
  for (const [how, secondCursor] of [
    ['after its staged page expired', 'c-1'],
    ['from another cursor than its staged page started at', 'c-9'],
  ] as const) {
    void it(`${how}: stages it again, not a CURSOR_LOOP`, async () => {
      const sourceId = `fp-again-${secondCursor}`;
      const http = stubHttp({ records: [{ id: 'a1' }], nextCursor: 'c-2' });
      const { acts, claim } = await claimed(sourceId, http);
      const env = new MockActivityEnvironment();
      const run = {
        fetchRunId: claim.fetchRunId,
        leaseToken: claim.leaseToken,
        sourceId,
        businessDate: DATE,
      };
      const fetchFrom = (cursor: string) =>
        env.run(acts.fetchPage, { ...run, pageNo: 0, cursor, pageSize: 1 });
      assert.deepEqual(await fetchFrom('c-1'), { recordCount: 1, nextCursor: 'c-2' });
      if (secondCursor === 'c-1')
        await db.prisma.fetchedPage.deleteMany({ where: { key: { contains: sourceId } } });
      assert.deepEqual(await fetchFrom(secondCursor), { recordCount: 1, nextCursor: 'c-2' });
      assert.equal(http.calls, 2);
      const [staged] = await db.prisma.fetchedPage.findMany({ where: { key: { contains: sourceId } } });
      assert.equal(staged?.startCursor, secondCursor);
      assert.equal(await db.prisma.runCursor.count({ where: { fetchRunId: claim.fetchRunId } }), 1);
    });
  }
});
