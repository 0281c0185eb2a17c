// Incremental windows (issue 38 part 2), on real Temporal, PostgreSQL and the demo partner's
// "updated since" export (partner/changes.ts, an imitation of Zendesk's time-based incremental
// export: inclusive start_time, whole seconds, the tickets of a page's last second sent again at
// the top of the next page, changes of the last minute held back). Every run is judged by the
// partner's own list of what it holds: every ticket stored once (R3: upserts, not duplicates),
// with the data of its latest change; the watermark only ever moves forward, to what was stored.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import type { Ticket } from '../partner/changes.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';
import { insertHeldRun } from './helpers/job-rows.ts';
import { commitPage } from '../db/pages/page-store.ts';
import { setSourceWatermark } from '../client/sources/watermark.ts';

const SECRET_REF = 'DF_SECRET_CHANGES_TOKEN';
const LOOKBACK = 120;
const NOW = Math.floor(Date.now() / 1000);
/** Every ticket's change is hours old: none is held back as too recent. */
const BASE = NOW - 3 * 3600;
const START = new Date((BASE - 3600) * 1000).toISOString();

let partner: PartnerServer;
let kit: JobKit;

function sourceConfig(ordered: boolean, lookback = LOOKBACK, start = START) {
  return {
    request: {
      path: '/changes/api/v2/incremental/tickets.json',
      query: { start_time: '{sinceEpoch}', per_page: '10' },
    },
    auth: { type: 'basic', username: 'agent@example.com/token', secret: SECRET_REF },
    records: { path: 'tickets', id: 'id' },
    pagination: { type: 'next_url', path: 'next_page', donePath: 'end_of_stream' },
    incremental: { cursorField: 'updated_at', format: 'iso', start, lookback, ordered },
  };
}

/**
 * Tickets `from..to` changed at `at(i)`; by default three tickets share each second, so that the
 * export's pages of ten break inside a second.
 */
function tickets(from: number, to: number, at = (i: number) => BASE + Math.floor(i / 3) * 10, tag = 'v1') {
  const out: Ticket[] = [];
  for (let i = from; i <= to; i++) {
    out.push({ id: i, subject: `ticket ${i} ${tag}`, status: 'open', generated_timestamp: at(i) });
  }
  return out;
}

/** The source's stored tickets: id → subject, and how many rows there are. */
async function stored(sourceId: string): Promise<{ rows: number; subjects: Map<string, string> }> {
  const rows = await kit.prisma.fetchedRecord.findMany({
    where: { sourceId },
    select: { externalId: true, data: true },
  });
  return {
    rows: rows.length,
    subjects: new Map(rows.map((r) => [r.externalId, (r.data as { subject: string }).subject])),
  };
}

/** The partner's own list: what a complete copy must hold. */
function partnerList(): Map<string, string> {
  return new Map(partner.changes.tickets().map((t) => [String(t.id), t.subject]));
}

async function watermarkOf(sourceId: string) {
  return kit.prisma.sourceWatermark.findUnique({ where: { sourceId } });
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const newest = () => Math.max(...partner.changes.tickets().map((t) => t.generated_timestamp));

void describe('an incremental http source (updated since its watermark)', () => {
  before(async () => {
    partner = await startPartner({ port: 0 });
    kit = await jobTestKit({ secrets: { [SECRET_REF]: partner.changes.token } });
    await kit.addSource({
      id: 'tickets',
      job: 'http',
      baseUrl: partner.url,
      config: sourceConfig(true),
      pageSize: 10,
    });
    partner.changes.put(tickets(1, 60));
  });
  after(async () => {
    await kit?.close();
    await partner?.close();
  });

  it('the first run reads from the start, stores every ticket once and sets the watermark to the newest stored', async () => {
    const run = await kit.run('tickets', '2026-10-01');
    assert.equal(run.status, 'succeeded', run.errorType);
    const { rows, subjects } = await stored('tickets');
    assert.deepEqual(subjects, partnerList(), 'every ticket the partner holds, each once');
    assert.equal(rows, 60);
    // Pages of ten broke inside a second: the export repeated those tickets, and they merged.
    const served = partner.changes.requests().reduce((n, r) => n + r.count, 0);
    assert.ok(served > 60, `the export sent repeats (${served} tickets served)`);
    assert.equal(
      partner.changes.requests()[0]?.startTime,
      Date.parse(START) / 1000,
      'the first window starts at the start',
    );
    const w = await watermarkOf('tickets');
    assert.equal(w?.value, iso(newest()));
    assert.equal(w?.kind, 'timestamp');
    const row = await kit.prisma.fetchRun.findFirstOrThrow({ where: { id: run.row.id } });
    assert.equal(row.windowSince, START);
    assert.equal(row.windowHead, true);
  });

  it("the next run reads what changed since the watermark less the lookback: changes are upserts, a ticket of the watermark's own second and a late write inside the lookback are read", async () => {
    const mark = newest();
    const before = partner.changes.requests().length;
    partner.changes.put([
      // Five changed tickets, three new ones.
      ...tickets(1, 5, (i) => mark + 100 + i, 'v2'),
      ...tickets(61, 63, (i) => mark + 200 + i),
      // A new ticket changed in the very second of the watermark (an inclusive bound keeps it)…
      { id: 64, subject: 'ticket 64 v1', status: 'open', generated_timestamp: mark },
      // …and a late write, older than the watermark but inside the lookback.
      { id: 65, subject: 'ticket 65 v1', status: 'open', generated_timestamp: mark - LOOKBACK / 2 },
    ]);
    const run = await kit.run('tickets', '2026-10-02');
    assert.equal(run.status, 'succeeded', run.errorType);
    const first = partner.changes.requests()[before];
    assert.equal(first?.startTime, mark - LOOKBACK, 'the window starts at the watermark less the lookback');
    const { rows, subjects } = await stored('tickets');
    assert.deepEqual(subjects, partnerList(), 'every ticket, changed ones with their latest data');
    assert.equal(rows, 65, 'no ticket stored twice');
    // It read its window only: the tickets it wrote are those changed since its lower bound.
    const written = await kit.prisma.fetchedRecord.findMany({
      where: { fetchRunId: run.row.id },
      select: { externalId: true },
    });
    const inWindow = partner.changes.tickets().filter((t) => t.generated_timestamp >= mark - LOOKBACK);
    assert.deepEqual(new Set(written.map((r) => r.externalId)), new Set(inWindow.map((t) => String(t.id))));
    assert.ok(inWindow.length < 65);
    assert.equal((await watermarkOf('tickets'))?.value, iso(newest()));
  });

  it('a run that fails half-way keeps the watermark at what it stored; run again, it goes on from its last stored page and the copy is complete', async () => {
    const mark = newest();
    partner.changes.put(tickets(66, 125, (i) => mark + 10 + (i - 66) * 5));
    // A permission taken away in the middle of the window: pages from then on are refused.
    partner.changes.refuseFrom = mark + 10 + 30 * 5;
    const failed = await kit.run('tickets', '2026-10-03');
    assert.equal(failed.status, 'dead_lettered', 'a 403 fails the run for good');
    const w = await watermarkOf('tickets');
    assert.ok(w && Date.parse(w.value) > mark * 1000, 'the stored pages moved the watermark (ordered)');
    // Only to what was stored: the newest change among the rows the run wrote.
    const mine = await kit.prisma.fetchedRecord.findMany({
      where: { fetchRunId: failed.row.id },
      select: { data: true },
    });
    const newestStored = Math.max(
      ...mine.map((r) => Date.parse((r.data as { updated_at: string }).updated_at)),
    );
    assert.equal(Date.parse(w.value), newestStored);
    assert.ok(newestStored < newest() * 1000, 'the refusal came before the end of the window');

    partner.changes.refuseFrom = undefined;
    const before = partner.changes.requests().length;
    const again = await kit.run('tickets', '2026-10-03');
    assert.equal(again.status, 'succeeded', again.errorType);
    assert.equal(again.row.id, failed.row.id, 'the same run, claimed again');
    const first = partner.changes.requests()[before];
    assert.ok(
      first?.startTime !== undefined && first.startTime * 1000 >= newestStored - 1000,
      "it went on from its last stored page, not from its window's start",
    );
    const { rows, subjects } = await stored('tickets');
    assert.deepEqual(subjects, partnerList());
    assert.equal(rows, 125);
    assert.equal((await watermarkOf('tickets'))?.value, iso(newest()));
  });

  it('a run of an older date (a backfill) reads its own day and never moves the watermark', async () => {
    const was = await watermarkOf('tickets');
    const before = partner.changes.requests().length;
    const run = await kit.run('tickets', '2026-09-20');
    assert.equal(run.status, 'succeeded', run.errorType);
    const row = await kit.prisma.fetchRun.findFirstOrThrow({ where: { id: run.row.id } });
    assert.equal(row.windowHead, false);
    assert.equal(
      row.windowSince,
      new Date(Date.parse('2026-09-20T00:00:00Z') - LOOKBACK * 1000).toISOString(),
    );
    assert.equal(row.windowUntil, '2026-09-21T00:00:00.000Z');
    assert.equal(partner.changes.requests()[before]?.startTime, Date.parse(row.windowSince) / 1000);
    // The export has no upper bound: the backfill read everything since its day, as upserts.
    assert.equal((await stored('tickets')).rows, 125);
    assert.deepEqual(await watermarkOf('tickets'), was, 'the watermark is as it was');
  });

  it('unordered: a run that fails half-way leaves the watermark where it was (the whole window is read again)', async () => {
    await kit.addSource({
      id: 'tickets-any',
      job: 'http',
      baseUrl: partner.url,
      config: sourceConfig(false),
      pageSize: 10,
    });
    partner.changes.refuseFrom = BASE + 100;
    const failed = await kit.run('tickets-any', '2026-10-01');
    assert.equal(failed.status, 'dead_lettered');
    assert.ok(failed.row.pagesStored > 0, 'it stored pages before the refusal');
    assert.equal(await watermarkOf('tickets-any'), null, 'no watermark before the run read its whole window');
    partner.changes.refuseFrom = undefined;
    const again = await kit.run('tickets-any', '2026-10-01');
    assert.equal(again.status, 'succeeded', again.errorType);
    assert.deepEqual((await stored('tickets-any')).subjects, partnerList());
    assert.equal((await watermarkOf('tickets-any'))?.value, iso(newest()));
  });

  it('lookback 0: tickets of one second on both sides of a stored page break are all read by the next run (an inclusive lower bound)', async () => {
    // Its own tickets, changed after every other one: its window starts after them.
    const start = newest() + 1;
    partner.changes.put(tickets(1001, 1030, (i) => start + 5 + Math.floor((i - 1000) / 3) * 10));
    await kit.addSource({
      id: 'tickets-edge',
      job: 'http',
      baseUrl: partner.url,
      config: sourceConfig(true, 0, iso(start)),
      pageSize: 10,
    });
    // The first stored page is tickets 1001-1010; 1011 shares 1010's second. A refusal of the next
    // request leaves the run with that page only.
    const second = partner.changes.tickets().find((t) => t.id === 1010)!.generated_timestamp;
    assert.equal(partner.changes.tickets().find((t) => t.id === 1011)?.generated_timestamp, second);
    partner.changes.refuseFrom = second;
    const failed = await kit.run('tickets-edge', '2026-10-01');
    assert.equal(failed.status, 'dead_lettered');
    assert.equal((await watermarkOf('tickets-edge'))?.value, iso(second));
    const ids = (await stored('tickets-edge')).subjects;
    assert.ok(ids.has('1010') && !ids.has('1011'), 'the stored page broke inside a second');
    partner.changes.refuseFrom = undefined;
    // The next day's run reads from the watermark itself (no lookback).
    const before = partner.changes.requests().length;
    const next = await kit.run('tickets-edge', '2026-10-02');
    assert.equal(next.status, 'succeeded', next.errorType);
    assert.equal(partner.changes.requests()[before]?.startTime, second);
    const mine = [...partnerList()].filter(([id]) => Number(id) > 1000);
    assert.deepEqual(
      (await stored('tickets-edge')).subjects,
      new Map(mine),
      'ticket 1011 and every other one',
    );
  });

  it('an operator moves the watermark back with the CLI, audited; the next run reads from there; runs show prints its window', async () => {
    const env = { DATABASE_URL: kit.db.url, LOG_LEVEL: 'warn' };
    const shown = await runCliInProcess(['sources', 'watermark', 'tickets'], env);
    assert.equal(shown.code, 0, shown.stderr);
    const stored = (await watermarkOf('tickets'))!.value;
    assert.ok(
      shown.stdout.includes(`watermark ${stored} (timestamp, by the run of 2026-10-03)`),
      shown.stdout,
    );
    const bad = await runCliInProcess(
      ['sources', 'watermark', 'tickets', '--set', '2026-10-01 10:00', '--reason', 'x'],
      env,
    );
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /ISO-8601 instant with its offset/);
    const back = iso(BASE + 100);
    const set = await runCliInProcess(
      [
        'sources',
        'watermark',
        'tickets',
        '--set',
        back,
        '--reason',
        'a partner fix rewrote old tickets',
        '--by',
        'ops',
      ],
      env,
    );
    assert.equal(set.code, 0, set.stderr);
    const audit = await kit.prisma.auditEntry.findFirstOrThrow({
      where: { targetId: 'tickets', action: 'source.watermark_set' },
    });
    assert.equal(audit.actor, 'ops');
    assert.deepEqual((audit.details as { now: string }).now, back);
    const before = partner.changes.requests().length;
    const run = await kit.run('tickets', '2026-10-05');
    assert.equal(run.status, 'succeeded', run.errorType);
    assert.equal(partner.changes.requests()[before]?.startTime, BASE + 100 - LOOKBACK);
    assert.equal((await watermarkOf('tickets'))?.value, iso(newest()), 'the run moved it forward again');
    const show = await runCliInProcess(['runs', 'show', 'tickets/2026-10-05'], env);
    assert.equal(show.code, 0, show.stderr);
    assert.match(
      show.stdout,
      new RegExp(`window +since ${iso(BASE + 100 - LOOKBACK).replace(/\./g, '\\.')} until .* \\(head`),
    );
    const reset = await runCliInProcess(
      ['sources', 'watermark', 'tickets', '--reset', '--reason', 'start over'],
      env,
    );
    assert.equal(reset.code, 0, reset.stderr);
    assert.equal(await watermarkOf('tickets'), null);
    const source = await runCliInProcess(['sources', 'show', 'tickets'], env);
    assert.match(source.stdout, /watermark +none \(the next run starts from the start\)/);
    // `sources try` shows the window a run would read now: from the start again, after the reset.
    const tried = await runCliInProcess(
      ['sources', 'try', 'tickets', '--date', '2026-10-06', '--pages', '1', '--json'],
      { ...env, [SECRET_REF]: partner.changes.token },
    );
    assert.equal(tried.code, 0, tried.stderr);
    const report = JSON.parse(tried.stdout) as { window?: { since: string; head: boolean }; records: number };
    assert.deepEqual([report.window?.since, report.window?.head, report.records], [START, true, 10]);
  });

  it("a live run whose window an operator's move overrode no longer moves the watermark; a run whose window came after does", async () => {
    const ctx = { prisma: kit.prisma };
    const by = { reason: 'drill', actor: 'ops' };
    await setSourceWatermark(ctx, 'tickets', { ...by, to: iso(BASE) });
    const live = await insertHeldRun(
      kit.prisma,
      { jobType: 'http', sourceId: 'tickets', date: '2026-10-06' },
      { windowSince: iso(BASE), windowUntil: iso(NOW), windowHead: true },
    );
    const moved = await setSourceWatermark(ctx, 'tickets', { ...by, to: iso(BASE + 50) });
    assert.equal(moved.runsDemoted, 1, 'the run whose window came before the move');
    const later = iso(NOW - 70);
    const commit = (fence: { fetchRunId: string; leaseToken: string }, key: string) =>
      commitPage(kit.prisma, {
        fence,
        sourceId: 'tickets',
        events: [],
        record: {
          key,
          fingerprint: 'f',
          result: {},
          createdAt: new Date(),
          expiresAt: new Date(Date.now() + 60_000),
        },
        run: { pagesStored: 1, recordCount: 1, cursor: null },
        leaseTtlMs: 60_000,
        workflowRunId: undefined,
        watermark: { kind: 'timestamp', highest: later, ordered: true, last: true },
      });
    assert.equal((await commit(live.fence, 'drill:live')).advanced, true, 'its page is stored');
    assert.equal(
      (await watermarkOf('tickets'))?.value,
      iso(BASE + 50),
      'but the watermark stays where the operator put it',
    );
    const after = await insertHeldRun(
      kit.prisma,
      { jobType: 'http', sourceId: 'tickets', date: '2026-10-07' },
      { windowSince: iso(BASE + 50), windowUntil: iso(NOW), windowHead: true },
    );
    await commit(after.fence, 'drill:after');
    assert.equal((await watermarkOf('tickets'))?.value, later, 'a head run fixed after the move moves it');
  });
});
