// Activity-level tests of the database steps on real PostgreSQL (no Temporal needed: these
// activities use no activity context). They prove R1 fencing and R3 idempotency directly.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { createActivities } from '../activities/index.ts';
import { appendToStagedPage, dropStagedPage } from '../db/pages/staging.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import type { ClaimInput, ClaimResult, PartnerRecord } from '../contract/types.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';

let db: TestDatabase;
let acts: ReturnType<typeof createActivities>;
const DATE = '2026-05-01';

before(async () => {
  db = await useTestDatabase();
  acts = createActivities(testDeps(db.prisma));
});
after(async () => db?.drop());

function claimInput(sourceId: string, workflowId = `fetch/fetch-records/${sourceId}/${DATE}`): ClaimInput {
  return {
    sourceId,
    businessDate: DATE,
    workflowId,
    workflowRunId: 'run-1',
    correlationId: 'corr-1',
    requestedBy: 'test',
    scheduledAt: '2026-05-01T02:00:00Z',
  };
}

function records(sourceId: string, n: number, tag = 'v1'): PartnerRecord[] {
  return Array.from({ length: n }, (_, i) => ({ id: `${sourceId}-${i}`, tag }));
}

type Base = { fetchRunId: string; leaseToken: string; sourceId: string; businessDate: string };

/**
 * Stages a page as fetchPage would (fenced by the run's lease) and returns the storePage input
 * that reports it. `unfenced` writes the staged row directly, to stage what fencing would refuse.
 */
async function stage(
  base: Base,
  pageNo: number,
  recs: PartnerRecord[],
  nextCursor: string | null,
  unfenced = false,
) {
  const key = pageKeyFor({ jobType: 'fetch-records', sourceId: base.sourceId, businessDate: DATE }, pageNo);
  await dropStagedPage(db.prisma, key);
  const now = new Date();
  const row = {
    key,
    startCursor: pageNo === 0 ? null : `c${pageNo}`,
    cursor: nextCursor,
    complete: nextCursor === null,
  };
  if (unfenced) {
    const expiresAt = new Date(now.getTime() + 60_000);
    await db.prisma.fetchedPage.create({
      data: {
        ...row,
        recordCount: recs.length,
        records: recs as Prisma.InputJsonArray,
        updatedAt: now,
        expiresAt,
      },
    });
  } else {
    const staged = await appendToStagedPage(db.prisma, {
      ...row,
      fence: { fetchRunId: base.fetchRunId, leaseToken: base.leaseToken, pageNo },
      from: undefined,
      records: recs,
      now,
      expiresAt: new Date(now.getTime() + 60_000),
    });
    assert.ok(staged, 'staged under the lease');
  }
  return { ...base, pageNo, recordCount: recs.length, nextCursor };
}

type Claimed = Extract<ClaimResult, { outcome: 'claimed' }>;

/** A source and a claimed run of it; `base` is what every storePage/completeRun input starts with. */
async function claimed(sourceId: string): Promise<Claimed & { base: Base }> {
  await createSource(db.prisma, sourceId, 'http://127.0.0.1:9');
  const claim = await acts.claimRun(claimInput(sourceId));
  if (claim.outcome !== 'claimed') assert.fail(`expected a claim, got ${claim.outcome}`);
  const base = { fetchRunId: claim.fetchRunId, leaseToken: claim.leaseToken, sourceId, businessDate: DATE };
  return { ...claim, base };
}

async function effects(sourceId: string) {
  const [rows, events, keys, staged, run] = await Promise.all([
    db.prisma.fetchedRecord.count({ where: { sourceId } }),
    db.prisma.outboxEvent.count({ where: { payload: { path: ['sourceId'], equals: sourceId } } }),
    db.prisma.idempotencyRecord.count({ where: { key: { startsWith: `fetch-records:${sourceId}:` } } }),
    db.prisma.fetchedPage.count({ where: { key: { startsWith: `fetch-records:${sourceId}:` } } }),
    db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } }),
  ]);
  return { rows, events, keys, staged, pagesStored: run.pagesStored, recordsStored: run.recordsStored };
}

async function failureType(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    return err instanceof ApplicationFailure
      ? (err.type ?? undefined)
      : `not an ApplicationFailure: ${String(err)}`;
  }
  return undefined;
}

describe('store-page', () => {
  it('a retried page (same key, same records) writes no duplicate rows, events or idempotency records', async () => {
    const { base: input } = await claimed('s1');
    const page = await stage(input, 0, records('s1', 40), 'c1');
    const first = await acts.storePage(page);
    const second = await acts.storePage(page);
    assert.equal(first.replayed, false);
    assert.equal(second.replayed, true);
    assert.equal(second.eventId, first.eventId);
    assert.deepEqual(await effects('s1'), {
      rows: 40,
      events: 1,
      keys: 1,
      staged: 0,
      pagesStored: 1,
      recordsStored: 40,
    });
  });

  it('two concurrent attempts of the same page produce exactly one effect', async () => {
    const { base } = await claimed('s2');
    const page = await stage(base, 0, records('s2', 25), null);
    const results = await Promise.all([acts.storePage(page), acts.storePage(page), acts.storePage(page)]);
    assert.deepEqual(results.map((r) => r.replayed).sort(), [false, true, true]);
    assert.equal(new Set(results.map((r) => r.eventId)).size, 1);
    assert.deepEqual(await effects('s2'), {
      rows: 25,
      events: 1,
      keys: 1,
      staged: 0,
      pagesStored: 1,
      recordsStored: 25,
    });
  });

  it('the same key with different records is an IdempotencyConflict and writes nothing', async () => {
    const { base } = await claimed('s3');
    await acts.storePage(await stage(base, 0, records('s3', 10), 'c1'));
    // The same page key fetched again later, with different content.
    const type = await failureType(acts.storePage(await stage(base, 0, records('s3', 10, 'v2'), 'c1', true)));
    assert.equal(type, 'IdempotencyConflict');
    assert.deepEqual(await effects('s3'), {
      rows: 10,
      events: 1,
      keys: 1,
      staged: 1,
      pagesStored: 1,
      recordsStored: 10,
    });
    const stored = await db.prisma.fetchedRecord.findFirstOrThrow({ where: { externalId: 's3-0' } });
    assert.equal((stored.data as { tag: string }).tag, 'v1');
  });

  it('a staged page that is missing or differs from what fetchPage reported is refused and writes nothing', async () => {
    const { base } = await claimed('s5');
    const missing = { ...base, pageNo: 3, recordCount: 5, nextCursor: null };
    assert.equal(await failureType(acts.storePage(missing)), 'NotFound');
    const page = await stage(base, 0, records('s5', 5), 'c1');
    assert.equal(await failureType(acts.storePage({ ...page, recordCount: 6 })), 'InvalidInput');
    assert.deepEqual(await effects('s5'), {
      rows: 0,
      events: 0,
      keys: 0,
      staged: 1,
      pagesStored: 0,
      recordsStored: 0,
    });
  });

  it('two attempts staging the same page from the same point: exactly one append applies', async () => {
    const { base, ...claim } = await claimed('s6');
    await stage(base, 0, records('s6', 10), 'c1');
    const key = pageKeyFor({ jobType: 'fetch-records', sourceId: 's6', businessDate: DATE }, 0);
    const now = new Date();
    const append = (tag: string) =>
      appendToStagedPage(db.prisma, {
        key,
        fence: { fetchRunId: claim.fetchRunId, leaseToken: claim.leaseToken, pageNo: 0 },
        startCursor: null,
        from: { cursor: 'c1', recordCount: 10 },
        records: [{ id: `s6-next-${tag}` }],
        cursor: 'c2',
        complete: false,
        now,
        expiresAt: new Date(now.getTime() + 60_000),
      });
    const applied = await Promise.all([append('x'), append('y'), append('z')]);
    assert.deepEqual(applied.map((a) => a?.recordCount ?? 'not applied').sort(), [
      11,
      'not applied',
      'not applied',
    ]);
    const row = await db.prisma.fetchedPage.findUniqueOrThrow({ where: { key }, include: { parts: true } });
    assert.equal(row.recordCount, 11);
    // The first staging write's 10 records on the page, the one append that applied as its one part.
    assert.equal((row.records as unknown[]).length, 10);
    assert.deepEqual(
      row.parts.map((p) => [p.seq, (p.records as unknown[]).length]),
      [[11, 1]],
    );
  });

  it('a page staged by several appends (its first write and its parts) is stored whole, in order, and its parts go with it', async () => {
    const { base, ...claim } = await claimed('s6p');
    const all = records('s6p', 12);
    await stage(base, 0, all.slice(0, 5), 'c1');
    const key = pageKeyFor({ jobType: 'fetch-records', sourceId: 's6p', businessDate: DATE }, 0);
    const fence = { fetchRunId: claim.fetchRunId, leaseToken: claim.leaseToken, pageNo: 0 };
    const now = new Date();
    const expiresAt = new Date(now.getTime() + 60_000);
    const at = { key, fence, startCursor: null, now, expiresAt };
    assert.ok(
      await appendToStagedPage(db.prisma, {
        ...at,
        from: { cursor: 'c1', recordCount: 5 },
        records: all.slice(5, 9),
        cursor: 'c2',
        complete: false,
      }),
    );
    // A response with no records (the partner's last, empty) adds no part.
    assert.ok(
      await appendToStagedPage(db.prisma, {
        ...at,
        from: { cursor: 'c2', recordCount: 9 },
        records: [],
        cursor: 'c3',
        complete: false,
      }),
    );
    assert.ok(
      await appendToStagedPage(db.prisma, {
        ...at,
        from: { cursor: 'c3', recordCount: 9 },
        records: all.slice(9),
        cursor: null,
        complete: true,
      }),
    );
    assert.equal(await db.prisma.fetchedPagePart.count({ where: { key } }), 2);
    const stored = await acts.storePage({ ...base, pageNo: 0, recordCount: 12, nextCursor: null });
    assert.equal(stored.recordCount, 12);
    const event = await db.prisma.outboxEvent.findUniqueOrThrow({ where: { id: stored.eventId! } });
    assert.deepEqual(
      (event.payload as { externalIds: string[] }).externalIds,
      all.map((r) => r.id),
      'every record once, in the order the partner sent them',
    );
    assert.equal((await effects('s6p')).rows, 12);
    assert.equal(
      await db.prisma.fetchedPagePart.count({ where: { key } }),
      0,
      'the parts went with the page',
    );
  });

  it('a late fetch attempt cannot stage a page that is already stored, nor under a lost lease', async () => {
    const { base, ...claim } = await claimed('s7');
    await acts.storePage(await stage(base, 0, records('s7', 4), 'c1'));
    const now = new Date();
    const late = {
      key: pageKeyFor({ jobType: 'fetch-records', sourceId: 's7', businessDate: DATE }, 0),
      startCursor: null,
      from: undefined,
      records: records('s7', 4),
      cursor: 'c1',
      complete: false,
      now,
      expiresAt: new Date(now.getTime() + 60_000),
    };
    const stored = { fetchRunId: claim.fetchRunId, leaseToken: claim.leaseToken, pageNo: 0 };
    assert.equal(await appendToStagedPage(db.prisma, { ...late, fence: stored }), undefined);
    const lost = {
      fetchRunId: claim.fetchRunId,
      leaseToken: '00000000-0000-4000-8000-000000000000',
      pageNo: 1,
    };
    assert.equal(
      await appendToStagedPage(db.prisma, {
        ...late,
        key: pageKeyFor({ jobType: 'fetch-records', sourceId: 's7', businessDate: DATE }, 1),
        fence: lost,
      }),
      undefined,
    );
    assert.equal(
      await db.prisma.fetchedPage.count({ where: { key: { startsWith: 'fetch-records:s7:' } } }),
      0,
    );
  });

  it('an id repeated within one page is stored once, the last occurrence winning', async () => {
    const { base } = await claimed('s8');
    const recs = [
      { id: 's8-1', v: 1 },
      { id: 's8-2', v: 1 },
      { id: 's8-1', v: 2 },
    ];
    const result = await acts.storePage(await stage(base, 0, recs, null));
    assert.equal(result.recordCount, 2);
    const row = await db.prisma.fetchedRecord.findFirstOrThrow({ where: { externalId: 's8-1' } });
    assert.equal((row.data as { v: number }).v, 2);
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId: 's8' } }), 2);
  });

  it('a zombie attempt holding an old lease token cannot write (LeaseLost)', async () => {
    const old = await claimed('s4');
    // A new execution of the same workflow id (a restart after a failure) claims: the token rotates.
    const current = await acts.claimRun({ ...claimInput('s4'), workflowRunId: 'run-2' });
    assert.equal(current.outcome, 'claimed');
    assert.notEqual(current.outcome === 'claimed' && current.leaseToken, old.leaseToken);
    const base = {
      fetchRunId: old.fetchRunId,
      leaseToken: old.leaseToken,
      sourceId: 's4',
      businessDate: DATE,
    };
    const type = await failureType(acts.storePage(await stage(base, 0, records('s4', 5), null, true)));
    assert.equal(type, 'LeaseLost');
    assert.deepEqual(await effects('s4'), {
      rows: 0,
      events: 0,
      keys: 0,
      staged: 1,
      pagesStored: 0,
      recordsStored: 0,
    });
    assert.equal(
      await failureType(
        acts.completeRun({
          fetchRunId: old.fetchRunId,
          leaseToken: old.leaseToken,
          sourceId: 's4',
          businessDate: DATE,
        }),
      ),
      'LeaseLost',
    );
  });
});

describe('claim-run and complete-run', () => {
  it('a second workflow id is a duplicate while the lease is live, and takes over once it expired', async () => {
    const first = await claimed('c1');
    const other = claimInput('c1', 'fetch/fetch-records/c1/2026-05-01-scheduled');
    const dup = await acts.claimRun(other);
    assert.deepEqual(dup, {
      outcome: 'duplicate',
      fetchRunId: first.fetchRunId,
      status: 'running',
      ownerWorkflowId: `fetch/fetch-records/c1/${DATE}`,
    });
    // The owner stops renewing (its worker died): the lease runs out on the database's clock.
    await db.prisma
      .$executeRaw`UPDATE fetch_run SET lease_until = now() - interval '1 second' WHERE source_id = 'c1'`;
    const takeover = await acts.claimRun(other);
    assert.equal(takeover.outcome, 'claimed');
    assert.equal(takeover.outcome === 'claimed' && takeover.attempt, 2);
    assert.equal(await db.prisma.fetchRun.count({ where: { sourceId: 'c1' } }), 1);
  });

  it('a retried claim by the same execution keeps its token and attempt: a slow retry cannot fence out the run', async () => {
    const { base: _base, ...first } = await claimed('c4');
    const again = await acts.claimRun(claimInput('c4'));
    assert.deepEqual(again, first);
  });

  it('two workflow ids racing to claim a new business key: exactly one claims, the other is a duplicate', async () => {
    await createSource(db.prisma, 'c5', 'http://127.0.0.1:9');
    const ids = ['a', 'b', 'c', 'd'].map((x) => `fetch/fetch-records/c5/${DATE}-${x}`);
    const results = await Promise.all(
      ids.map((id) => acts.claimRun({ ...claimInput('c5', id), workflowRunId: id })),
    );
    assert.deepEqual(results.map((r) => r.outcome).sort(), [
      'claimed',
      'duplicate',
      'duplicate',
      'duplicate',
    ]);
    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'c5' } });
    const winner = results.find((r) => r.outcome === 'claimed');
    assert.equal(winner?.outcome === 'claimed' && winner.leaseToken, run.leaseToken);
    assert.equal(await db.prisma.fetchRun.count({ where: { sourceId: 'c5' } }), 1);
  });

  it('a workflow input that is not ids and dates (e.g. a token as correlation id) is InvalidInput, with no row', async () => {
    await createSource(db.prisma, 'c6', 'http://127.0.0.1:9');
    for (const bad of [
      { correlationId: 'Bearer abc def' },
      { businessDate: '2026-02-30' },
      { scheduledAt: 'soon' },
    ]) {
      assert.equal(await failureType(acts.claimRun({ ...claimInput('c6'), ...bad })), 'InvalidInput');
    }
    assert.equal(await db.prisma.fetchRun.count({ where: { sourceId: 'c6' } }), 0);
  });

  it('a disabled source fails with PermissionDenied before any side effect', async () => {
    await createSource(db.prisma, 'c2', 'http://127.0.0.1:9', { enabled: false });
    assert.equal(await failureType(acts.claimRun(claimInput('c2'))), 'PermissionDenied');
    assert.equal(await db.prisma.fetchRun.count({ where: { sourceId: 'c2' } }), 0);
  });

  it('finishRun after the run succeeded under the same claim changes nothing and says so, with its totals; under another token it says nothing', async () => {
    const { base: input, ...claim } = await claimed('c-finish');
    await acts.storePage(await stage(input, 0, records('c-finish', 3), null));
    await acts.completeRun(input);
    // The cancel that reached a replayed execution after its completeRun committed (R1, R9): the
    // row decides, the workflow reports the success.
    const fence = { fetchRunId: claim.fetchRunId, leaseToken: input.leaseToken };
    assert.deepEqual(await acts.finishRun({ ...fence, status: 'cancelled' }), {
      finished: false,
      deadLetterId: null,
      succeeded: { pages: 1, records: 3 },
    });
    assert.deepEqual(
      await acts.finishRun({
        ...fence,
        leaseToken: '00000000-0000-4000-8000-000000000000',
        status: 'cancelled',
      }),
      { finished: false, deadLetterId: null },
    );
    const run = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: claim.fetchRunId } });
    assert.equal(run.status, 'succeeded');
    assert.equal(await db.prisma.deadLetter.count({ where: { fetchRunId: claim.fetchRunId } }), 0);
  });

  it('completeRun repeated after success returns the same event and writes nothing more', async () => {
    const { base: input, ...claim } = await claimed('c3');
    await acts.storePage(await stage(input, 0, records('c3', 3), null));
    // An earlier attempt's failure on the row: the success clears it.
    await db.prisma.fetchRun.update({
      where: { id: claim.fetchRunId },
      data: { errorClass: 'UpstreamUnavailable', errorMessage: 'partner: 503', nextRunAt: new Date() },
    });
    const a = await acts.completeRun(input);
    const b = await acts.completeRun(input);
    assert.deepEqual(b, a);
    assert.deepEqual(a, { eventId: a.eventId, pages: 1, records: 3 });
    const run = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: claim.fetchRunId } });
    assert.equal(run.status, 'succeeded');
    // Its lease ended, its error and next attempt cleared, its token kept (a repeat is recognised).
    assert.deepEqual(
      [run.leaseUntil, run.nextRunAt, run.errorClass, run.errorMessage, run.leaseToken],
      [null, null, null, null, input.leaseToken],
    );
    assert.ok(run.finishedAt instanceof Date);
    assert.equal(
      await db.prisma.outboxEvent.count({ where: { topic: 'fetch.run_completed', aggregateId: run.id } }),
      1,
    );
    // A finished run is not claimed again: any starter gets its stored outcome, without effects.
    assert.deepEqual(await acts.claimRun({ ...claimInput('c3'), workflowRunId: 'run-9' }), {
      outcome: 'succeeded',
      fetchRunId: claim.fetchRunId,
      pages: 1,
      records: 3,
    });
  });
});
