// The guardrails of declarative sources (the `http` job), each against a hostile demo partner, over
// real Temporal, PostgreSQL and HTTP. Each trips with its own non-retryable type and code and leaves
// a dead letter saying so (R7, R10):
// - a next-page link to another origin is not followed, and that origin receives nothing at all —
//   no request, so no credential (OFF_ORIGIN_NEXT_URL, for a next URL in the body and a Link header);
// - a pagination loop over the whole run (page 3 pointing back to page 2: not an immediate repeat)
//   is caught by the engine's run-wide cursor memory (CURSOR_LOOP), as is a link back to page 1;
// - limits.maxPages, limits.maxResponseBytes (the body is not read past it: the partner stops
//   sending), limits.maxRecordsPerPage;
// - a record without an id, and one whose id is over the stored limit.
// And `sources try` reports the guardrail a run would meet while writing nothing at all.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { CatalogStyle } from '../partner/catalog.ts';
import { encodeCursor } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { runCli } from './helpers/cli.ts';
import { CATALOG_SECRET_REF, CATALOG_TOKEN, catalogConfig } from './helpers/http-sources.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';
import { temporalAddress } from './helpers/temporal.ts';

const RECORDS = 60;
const PAGE = 25; // asked per request and stored per page: page n starts at record 25·(n−1)+1
/** A date of its own per scenario: the partner's faults are matched by date, so none hits another's run. */
let day = 0;
const nextDate = () => `2026-10-${String(++day).padStart(2, '0')}`;

let partner: PartnerServer;
let kit: JobKit;
let other: Server;
const otherRequests: IncomingMessage['headers'][] = [];
let otherOrigin: string;

before(async () => {
  partner = await startPartner({ port: 0, catalogRecordCount: () => RECORDS, catalogToken: CATALOG_TOKEN });
  kit = await jobTestKit({ secrets: { [CATALOG_SECRET_REF]: CATALOG_TOKEN } });
  // The other origin an off-origin link points to: it records whatever reaches it.
  other = createServer((req, res) => {
    otherRequests.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[]}');
  });
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  const address = other.address();
  otherOrigin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
after(async () => {
  await kit?.close();
  await partner?.close();
  await new Promise((resolve) => other?.close(resolve));
});

async function addSource(
  id: string,
  style: CatalogStyle,
  extra: Record<string, unknown> = {},
): Promise<void> {
  await kit.addSource({
    id,
    job: 'http',
    baseUrl: partner.url,
    credentialsRef: CATALOG_SECRET_REF,
    pageSize: PAGE,
    retryPolicy: 'partnerHttpQuick',
    config: catalogConfig(style, extra),
  });
}

/** The run of `id` failed for good with `type`/`code`, and its dead letter says so. */
async function assertTripped(id: string, date: string, type: string, code: string): Promise<void> {
  const run = await kit.run(id, date);
  assert.deepEqual([run.status, run.errorType], ['dead_lettered', type], `${id}: ${run.row.errorMessage}`);
  const letters = await kit.prisma.deadLetter.findMany({ where: { sourceId: id } });
  assert.deepEqual(
    letters.map((d) => [d.errorType, d.errorCode, d.status]),
    [[type, code, 'open']],
    `${id}: one open dead letter`,
  );
}

describe('declarative source guardrails', () => {
  for (const style of ['next-url', 'link-header'] as const) {
    it(`http-guardrails: a ${style} link to another origin is not followed; that origin gets no request`, async () => {
      const date = nextDate();
      const id = `guard-off-origin-${style}`;
      await addSource(id, style);
      partner.faults.add({
        route: 'catalog',
        style,
        date,
        kind: 'off_origin',
        url: otherOrigin,
        times: 10,
      });
      await assertTripped(id, date, 'InvalidResponse', 'OFF_ORIGIN_NEXT_URL');
      assert.equal(otherRequests.length, 0, 'no request, so no credential, reached the other origin');
      assert.equal(await kit.prisma.fetchedRecord.count({ where: { sourceId: id } }), 0);
    });
  }

  for (const style of ['cursor', 'next-url', 'search'] as const) {
    it(`http-guardrails: ${style}, page 3 pointing back to page 2 is a run-wide CURSOR_LOOP`, async () => {
      const date = nextDate();
      const id = `guard-loop-${style}`;
      await addSource(id, style);
      partner.faults.add({
        route: 'catalog',
        style,
        date,
        position: encodeCursor(2 * PAGE + 1),
        kind: 'loop',
        times: 10,
      });
      await assertTripped(id, date, 'InvalidResponse', 'CURSOR_LOOP');
      assert.equal(
        partner.ledger.entries({ style, date }).filter((e) => e.fault === 'loop').length,
        1,
        'stopped at once',
      );
      // Pages 1 and 2 were stored before the loop showed; page 3's records never were.
      assert.equal(await kit.prisma.fetchedRecord.count({ where: { sourceId: id } }), 2 * PAGE);
      // The failed run keeps its loop memory: a retry resumes at page 3 and meets the loop again.
      const run = await kit.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: id } });
      assert.equal(await kit.prisma.runCursor.count({ where: { fetchRunId: run.id } }), 2);
    });
  }

  it('http-guardrails: limits.maxPages stops a run at its page budget', async () => {
    const date = nextDate();
    await addSource('guard-max-pages', 'offset', { limits: { maxPages: 2 } });
    await assertTripped('guard-max-pages', date, 'InvalidResponse', 'MAX_PAGES_EXCEEDED');
    assert.equal(partner.ledger.entries({ style: 'offset', date }).length, 2, 'two requests, no third');
  });

  it('http-guardrails: limits.maxResponseBytes refuses a huge body without reading it', async () => {
    const date = nextDate();
    await addSource('guard-bytes', 'page-number', { limits: { maxResponseBytes: 16_384 } });
    partner.faults.add({
      route: 'catalog',
      style: 'page-number',
      date,
      kind: 'oversize',
      bytes: 50_000_000,
      times: 10,
    });
    await assertTripped('guard-bytes', date, 'InvalidResponse', 'RESPONSE_TOO_LARGE');
    const sent = partner.ledger.entries({ style: 'page-number', date, fault: 'oversize' });
    assert.ok(sent.length >= 1);
    for (const e of sent)
      assert.ok((e.bytesSent ?? 0) < 5_000_000, `the partner stopped sending (${e.bytesSent} bytes)`);
  });

  it('http-guardrails: limits.maxRecordsPerPage refuses a partner page over it', async () => {
    const date = nextDate();
    await addSource('guard-records', 'none', { limits: { maxRecordsPerPage: 50 } });
    await assertTripped('guard-records', date, 'InvalidResponse', 'MAX_RECORDS_PER_PAGE_EXCEEDED');
  });

  it('http-guardrails: a record without an id, and an id over the stored limit', async () => {
    const date = nextDate();
    await addSource('guard-no-id', 'link-header', { records: { id: 'reference' } });
    await assertTripped('guard-no-id', date, 'InvalidResponse', 'RECORD_WITHOUT_ID');
    // The oversize fault pads every record with a long `padding` string: an id far over 200 characters.
    const longIdDate = nextDate();
    await addSource('guard-long-id', 'cursor', { records: { path: 'items', id: ['id', 'padding'] } });
    partner.faults.add({
      route: 'catalog',
      style: 'cursor',
      date: longIdDate,
      kind: 'oversize',
      bytes: 60_000,
      times: 10,
    });
    const run = await kit.run('guard-long-id', longIdDate);
    assert.deepEqual(
      [run.status, run.errorType],
      ['dead_lettered', 'InvalidResponse'],
      run.row.errorMessage ?? '',
    );
    const letter = await kit.prisma.deadLetter.findFirstOrThrow({ where: { sourceId: 'guard-long-id' } });
    assert.equal(letter.errorCode, 'RECORD_ID_TOO_LONG');
  });
});

describe('sources try', () => {
  it('http-guardrails: sources try prints what a run would store and the guardrail it would meet, writing nothing', async () => {
    const date = nextDate();
    const [okDate, loopDate] = [date, nextDate()];
    const id = 'guard-try';
    await addSource(id, 'cursor');
    partner.faults.add({
      route: 'catalog',
      style: 'cursor',
      date: loopDate,
      position: encodeCursor(2 * PAGE + 1),
      kind: 'loop',
      times: 10,
    });
    const counts = async () => {
      const rows = await kit.prisma.$queryRaw<{ t: string; n: number }[]>`
        SELECT 'fetch_run' AS t, count(*)::int AS n FROM fetch_run UNION ALL SELECT 'fetched_record', count(*)::int FROM fetched_record
        UNION ALL SELECT 'fetched_page', count(*)::int FROM fetched_page UNION ALL SELECT 'outbox_event', count(*)::int FROM outbox_event
        UNION ALL SELECT 'run_cursor', count(*)::int FROM run_cursor UNION ALL SELECT 'dead_letter', count(*)::int FROM dead_letter
        UNION ALL SELECT 'audit_entry', count(*)::int FROM audit_entry UNION ALL SELECT 'idempotency_record', count(*)::int FROM idempotency_record`;
      return Object.fromEntries(rows.map((r) => [r.t, r.n]));
    };
    const before = await counts();
    const env = {
      DATABASE_URL: kit.db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      [CATALOG_SECRET_REF]: CATALOG_TOKEN,
    };
    const ok = await runCli(['sources', 'try', id, '--date', okDate, '--pages', '2'], env);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(
      ok.stdout,
      /page 1: 25 record\(s\) \[catalog-\d{4}-\d\d-\d\d-00001, catalog-\d{4}-\d\d-\d\d-00002, … catalog-\d{4}-\d\d-\d\d-00025\]/,
    );
    assert.match(ok.stdout, /50 record\(s\) on 2 page\(s\); the partner has more/);
    const tripped = await runCli(['sources', 'try', id, '--date', loopDate, '--pages', '5', '--json'], env);
    assert.equal(tripped.code, 1, tripped.stderr);
    const report = JSON.parse(tripped.stdout) as { pages: unknown[]; failure: { code: string } };
    assert.deepEqual([report.pages.length, report.failure.code], [3, 'CURSOR_LOOP']);
    assert.match(tripped.stderr, /a run would fail with CURSOR_LOOP/);
    assert.deepEqual(await counts(), before, 'nothing written');
  });
});
