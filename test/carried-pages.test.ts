// Partner responses larger than a stored page's room: how one is spread over the page and the
// pages after it (pure), and fetchPage staging them on real PostgreSQL with a real activity
// context (MockActivityEnvironment): a carried page is returned without a partner call, a retried
// or concurrent attempt duplicates nothing, a page dropped as stale is carried over again, the
// carried pages are fenced like the page, and a carried page that is gone fails loudly.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { carriedPageOf, carryCursor, spreadResponse } from '../activities/pages/carried-pages.ts';
import { createActivities } from '../activities/index.ts';
import { defineJob, type FetchedPage } from '../activities/job-api/index.ts';
import { createJobRegistry } from '../activities/job-api/registry.ts';
import { appendToStagedPage } from '../db/pages/staging.ts';
import { storeFetchedRecords } from '../jobs/fetched-records.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import type { FetchPageResult } from '../contract/types.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';

const DATE = '2026-06-20';
const JOB = 'carry-test';

const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${from + i}` }));

void describe('carried-pages: spreading a response', () => {
  void it('a response that fits is the page as before: the partner cursor, complete at its end', () => {
    assert.deepEqual(spreadResponse({ records: ids(0, 10), nextCursor: 'p' }, 10, 25, 3), {
      records: ids(0, 10),
      cursor: 'p',
      complete: false,
      carried: [],
    });
    assert.equal(spreadResponse({ records: ids(0, 3), nextCursor: null }, 10, 25, 3).complete, true);
  });

  void it('an overflow fills the page, then pages of pageSize, chained by carry cursors to the partner cursor', () => {
    const s = spreadResponse({ records: ids(0, 100), nextCursor: 'p' }, 10, 25, 3);
    assert.deepEqual(s.records, ids(0, 10));
    assert.equal(s.complete, false);
    assert.deepEqual(
      s.carried.map((c) => [c.pageNo, c.records.length, c.complete]),
      [
        [4, 25],
        [5, 25],
        [6, 25],
        [7, 15],
      ].map(([n, size]) => [n, size, false]),
    );
    assert.deepEqual(
      s.carried.flatMap((c) => c.records),
      ids(10, 90),
    );
    const chain = [s.cursor, ...s.carried.map((c) => c.cursor)];
    assert.deepEqual(
      chain.slice(0, -1),
      s.carried.map((c) => c.startCursor),
    );
    assert.equal(chain.at(-1), 'p', "the last carried page continues at the partner's cursor");
    assert.deepEqual(
      s.carried.map((c) => carriedPageOf(c.startCursor)),
      [4, 5, 6, 7],
    );
  });

  void it('the last carried page of a response with no next cursor is complete, even when full', () => {
    const s = spreadResponse({ records: ids(0, 75), nextCursor: null }, 25, 25, 0);
    assert.deepEqual(
      s.carried.map((c) => [c.records.length, c.cursor === null, c.complete]),
      [
        [25, false, false],
        [25, true, true],
      ],
    );
  });

  void it('carry cursors are deterministic, differ by page and partner cursor, stay short, and are never a partner cursor', () => {
    assert.equal(carryCursor('p', 4), carryCursor('p', 4));
    assert.notEqual(carryCursor('p', 4), carryCursor('p', 5));
    assert.notEqual(carryCursor('p', 4), carryCursor('q', 4));
    assert.notEqual(carryCursor('p', 4), carryCursor(null, 4));
    assert.ok(carryCursor('x'.repeat(1024), 999_999).length < 100);
    for (const partner of [null, 'p', 'durable-fetch:carried:page:4', `durable-fetch:carried:page:x:end`]) {
      assert.equal(carriedPageOf(partner), undefined, String(partner));
    }
  });
});

/** A scripted partner: the response for each cursor, and every call the job made. */
interface Script {
  pages: Map<string | null, FetchedPage<{ id: string }>>;
  calls: { cursor: string | null; limit: number; pagesFetched: number }[];
  /** Held before answering, to make attempts overlap. */
  gate?: Promise<void>;
}
const scripts = new Map<string, Script>();

const carryJob = defineJob<Record<string, never>, { id: string }>({
  type: JOB,
  description: 'a scripted partner (tests)',
  recordId: (r) => r.id,
  fetchPage: async (ctx) => {
    const script = scripts.get(ctx.source.id);
    if (!script) throw new Error(`no script for ${ctx.source.id}`);
    script.calls.push({ cursor: ctx.cursor, limit: ctx.limit, pagesFetched: ctx.pagesFetched });
    await script.gate;
    const page = script.pages.get(ctx.cursor);
    if (!page) throw new Error(`no page at ${ctx.cursor}`);
    return page;
  },
  storePage: (_tx, records, ctx) =>
    storeFetchedRecords(
      ctx.sql,
      records.map((r) => ({ external_id: r.id, data: r.record })),
      ctx,
    ),
});

let db: TestDatabase;
before(async () => {
  db = await useTestDatabase();
});
after(async () => db?.drop());

/** A source of the scripted job, its run claimed, and how to fetch and store its pages. */
async function scripted(sourceId: string, pages: Script['pages'], pageSize = 25) {
  const script: Script = { pages, calls: [] };
  scripts.set(sourceId, script);
  await createSource(db.prisma, sourceId, 'http://127.0.0.1:9', { jobType: JOB, pageSize });
  const acts = createActivities(
    testDeps(db.prisma, { jobs: createJobRegistry([carryJob]), partnerPageLimit: 10 }),
  );
  const claim = await acts.claimRun({
    sourceId,
    businessDate: DATE,
    workflowId: `fetch/${JOB}/${sourceId}/${DATE}`,
    workflowRunId: 'r1',
    correlationId: 'c',
    requestedBy: 'test',
    scheduledAt: `${DATE}T00:00:00Z`,
  });
  if (claim.outcome !== 'claimed') throw new Error(`not claimed: ${claim.outcome}`);
  const run = {
    jobType: JOB,
    fetchRunId: claim.fetchRunId,
    leaseToken: claim.leaseToken,
    sourceId,
    businessDate: DATE,
  };
  const key = (n: number) => pageKeyFor({ jobType: JOB, sourceId, businessDate: DATE }, n);
  return {
    script,
    run,
    key,
    fetch: (pageNo: number, cursor: string | null, size = pageSize): Promise<FetchPageResult> =>
      new MockActivityEnvironment().run(acts.fetchPage, { ...run, pageNo, cursor, pageSize: size }),
    store: (pageNo: number, page: FetchPageResult) => acts.storePage({ ...run, pageNo, ...page }),
    staged: async () =>
      (
        await db.prisma.fetchedPage.findMany({
          where: { key: { startsWith: `${JOB}:${sourceId}:` } },
          select: {
            key: true,
            startCursor: true,
            cursor: true,
            complete: true,
            recordCount: true,
            records: true,
          },
        })
      )
        .map((p) => ({ ...p, pageNo: Number(p.key.split(':').pop()) }))
        .sort((a, b) => a.pageNo - b.pageNo),
  };
}

function failureCode(err: unknown): string {
  assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
  return `${err.type}/${(err.details?.[0] as { code: string }).code}`;
}

void describe('carried-pages: fetchPage', () => {
  void it('stages the overflow as the next pages in one step; they are returned without a partner call, the last continued from the partner cursor', async () => {
    const s = await scripted(
      'cp-chain',
      new Map([
        [null, { records: ids(0, 60), nextCursor: 'p1' }],
        ['p1', { records: ids(60, 30), nextCursor: null }],
      ]),
    );
    const page0 = await s.fetch(0, null);
    assert.deepEqual(page0, { recordCount: 25, nextCursor: carryCursor('p1', 1) });
    assert.deepEqual(
      (await s.staged()).map((p) => [p.pageNo, p.recordCount, p.startCursor, p.cursor]),
      [
        [0, 25, null, carryCursor('p1', 1)],
        [1, 25, carryCursor('p1', 1), carryCursor('p1', 2)],
        [2, 10, carryCursor('p1', 2), 'p1'],
      ],
    );
    await s.store(0, page0);
    const page1 = await s.fetch(1, page0.nextCursor);
    assert.deepEqual(page1, { recordCount: 25, nextCursor: carryCursor('p1', 2) });
    assert.equal(s.script.calls.length, 1, 'a carried page asks the partner nothing');
    await s.store(1, page1);
    // Page 2 holds 10 of 25: the partner is asked from its cursor for the room left.
    const page2 = await s.fetch(2, page1.nextCursor);
    assert.deepEqual(s.script.calls, [
      { cursor: null, limit: 10, pagesFetched: 0 },
      { cursor: 'p1', limit: 10, pagesFetched: 1 },
    ]);
    // 10 + 30 records: 25 here, the last 15 carried to page 3, which ends the run.
    assert.deepEqual(page2, { recordCount: 25, nextCursor: carryCursor(null, 3) });
    await s.store(2, page2);
    assert.deepEqual(await s.fetch(3, page2.nextCursor), { recordCount: 15, nextCursor: null });
    await s.store(3, { recordCount: 15, nextCursor: null });
    const stored = await db.prisma.fetchedRecord.findMany({ where: { sourceId: 'cp-chain' } });
    assert.deepEqual(
      stored.map((r) => r.externalId).sort(),
      ids(0, 90)
        .map((r) => r.id)
        .sort(),
    );
    assert.equal(s.script.calls.length, 2);
  });

  void it('a retried attempt of the page after its response was carried over asks nothing and changes nothing', async () => {
    const s = await scripted('cp-retry', new Map([[null, { records: ids(0, 70), nextCursor: 'p1' }]]));
    const first = await s.fetch(0, null);
    const before = await s.staged();
    assert.deepEqual(await s.fetch(0, null), first);
    assert.deepEqual(await s.staged(), before);
    assert.equal(s.script.calls.length, 1);
  });

  void it('a page asked for again with a larger page size stops at its carry cursor: the job never sees it, the partner is not asked', async () => {
    const s = await scripted('cp-grown', new Map([[null, { records: ids(0, 70), nextCursor: 'p1' }]]));
    const first = await s.fetch(0, null);
    assert.deepEqual(
      await s.fetch(0, null, 100),
      first,
      'the page as staged, ending where its response goes on',
    );
    assert.equal(s.script.calls.length, 1);
  });

  void it('two attempts of the page at once (a zombie and its retry) stage the response once', async () => {
    let open = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const s = await scripted('cp-race', new Map([[null, { records: ids(0, 70), nextCursor: 'p1' }]]));
    s.script.gate = gate;
    const both = Promise.all([s.fetch(0, null), s.fetch(0, null)]);
    while (s.script.calls.length < 2) await new Promise((r) => setTimeout(r, 10));
    open();
    const [a, b] = await both;
    assert.deepEqual(a, b);
    const staged = await s.staged();
    assert.deepEqual(
      staged.map((p) => p.recordCount),
      [25, 25, 20],
    );
    const all = staged.flatMap((p) => p.records as { id: string }[]).map((r) => r.id);
    assert.deepEqual(
      all,
      ids(0, 70).map((r) => r.id),
      'each record staged once, in order',
    );
  });

  void it('a page fetched again from another cursor (its staged page dropped as stale) carries its new response over the old carried pages', async () => {
    const s = await scripted(
      'cp-stale',
      new Map([
        ['x', { records: ids(0, 60), nextCursor: 'px' }],
        ['y', { records: ids(100, 60), nextCursor: 'py' }],
      ]),
    );
    await s.fetch(0, 'x');
    assert.deepEqual(await s.fetch(0, 'y'), { recordCount: 25, nextCursor: carryCursor('py', 1) });
    const staged = await s.staged();
    assert.deepEqual(
      staged.map((p) => [p.pageNo, p.startCursor, p.cursor]),
      [
        [0, 'y', carryCursor('py', 1)],
        [1, carryCursor('py', 1), carryCursor('py', 2)],
        [2, carryCursor('py', 2), 'py'],
      ],
    );
    assert.deepEqual(
      staged.flatMap((p) => p.records as { id: string }[]).map((r) => r.id),
      ids(100, 60).map((r) => r.id),
    );
  });

  void it('a carried page replaced by a new response of the page before it keeps no part of the page it replaces', async () => {
    const s = await scripted(
      'cp-parts',
      new Map([
        ['x', { records: ids(0, 60), nextCursor: 'px' }],
        ['y', { records: ids(100, 60), nextCursor: 'py' }],
      ]),
    );
    await s.fetch(0, 'x');
    // As if page 1 had been appended to after it was carried (a part of its own).
    await db.prisma.fetchedPagePart.create({ data: { key: s.key(1), seq: 99, records: ids(900, 3) } });
    await s.fetch(0, 'y');
    assert.equal(await db.prisma.fetchedPagePart.count({ where: { key: s.key(1) } }), 0);
    const staged = await s.staged();
    assert.deepEqual(
      staged.flatMap((p) => p.records as { id: string }[]).map((r) => r.id),
      ids(100, 60).map((r) => r.id),
    );
  });

  void it('a carried page that is gone (expired) fails NotFound CARRIED_PAGE_MISSING, asking the partner nothing', async () => {
    const s = await scripted('cp-gone', new Map([[null, { records: ids(0, 60), nextCursor: 'p1' }]]));
    const page0 = await s.fetch(0, null);
    await s.store(0, page0);
    await db.prisma.fetchedPage.deleteMany({ where: { key: s.key(1) } });
    const err = await s.fetch(1, page0.nextCursor).catch((e: unknown) => e);
    assert.equal(failureCode(err), 'NotFound/CARRIED_PAGE_MISSING');
    assert.equal(s.script.calls.length, 1);
  });

  void it('a partner cursor the run reached before is a CURSOR_LOOP, also on a response that spills over', async () => {
    const s = await scripted(
      'cp-loop',
      new Map([
        [null, { records: ids(0, 10), nextCursor: 'A' }],
        ['A', { records: ids(10, 15), nextCursor: 'B' }],
        ['B', { records: ids(25, 40), nextCursor: 'A' }],
      ]),
    );
    const page0 = await s.fetch(0, null);
    assert.deepEqual(page0, { recordCount: 25, nextCursor: 'B' });
    await s.store(0, page0);
    const err = await s.fetch(1, 'B').catch((e: unknown) => e);
    assert.equal(failureCode(err), 'InvalidResponse/CURSOR_LOOP');
    assert.deepEqual(
      (await s.staged()).map((p) => p.pageNo),
      [],
      'nothing of the looping response staged',
    );
  });

  void it('carried pages are fenced like the page: a late append of a page the run is past writes none of them', async () => {
    const s = await scripted('cp-fence', new Map([[null, { records: ids(0, 30), nextCursor: 'p1' }]]));
    const page0 = await s.fetch(0, null);
    await s.store(0, page0);
    const before = await s.staged();
    const now = new Date();
    const late = await appendToStagedPage(db.prisma, {
      key: s.key(0),
      fence: { fetchRunId: s.run.fetchRunId, leaseToken: s.run.leaseToken, pageNo: 0 },
      startCursor: null,
      from: undefined,
      records: ids(500, 25),
      cursor: carryCursor('late', 1),
      complete: false,
      carried: [
        {
          key: s.key(1),
          startCursor: carryCursor('late', 1),
          cursor: 'late',
          complete: false,
          records: ids(525, 25),
        },
      ],
      now,
      expiresAt: new Date(now.getTime() + 60_000),
    });
    assert.equal(late, undefined);
    assert.deepEqual(await s.staged(), before);
  });
});
