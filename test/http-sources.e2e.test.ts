// Declarative sources (the `http` job, configuration only) against the demo partner's catalog: one
// source per pagination style — cursor, next URL, Link header, page number, offset, none, and a
// POST search with the cursor in its body — each behind one of the catalog's auth kinds. Real
// Temporal, PostgreSQL and HTTP. The partner's own id list is the judge:
// - every record of the date is stored exactly once and listed in exactly one page event (R3, R5);
// - the partner saw the source's credential, in the form the config names, on every request (R2);
// - a 429 with Retry-After and then a 429 with only the partner's reset header are both waited out
//   for at least as long as they asked, and the run still stores everything once (R7);
// - a worker SIGKILLed mid-run (after its first stored page) leaves nothing twice once another
//   worker finishes the runs (R12a);
// - the token is in no row, no workflow history, no line the killed worker logged (at debug level),
//   and no output of `sources try` / `sources show` (R2, R11).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { PAGE_STORED_TOPIC } from '../jobs/fetched-records.ts';
import { CATALOG_STYLES, type CatalogStyle } from '../partner/catalog.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import type { fetchRecordsWorkflow } from '../workflows/fetch-records.ts';
import { runCli } from './helpers/cli.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';
import {
  CATALOG_SECRET_REF,
  CATALOG_TOKEN,
  catalogConfig,
  catalogIds,
  CREDENTIAL_OF,
} from './helpers/http-sources.ts';
import { spawnWorker, within } from './helpers/process.ts';
import { temporalAddress } from './helpers/temporal.ts';

const RECORDS = 60;
const PAGE_SIZE = 40; // stored pages of 40 + 20, each of several partner requests of at most 25
const DATE = '2026-09-14';
const RATE_LIMITED_DATE = '2026-09-15';
const CRASH_DATE = '2026-09-16';
/** Seconds the partner's reset header asks to wait: longer than any backoff of the retry preset's first attempts. */
const RESET_S = 3;

const idOf = (style: CatalogStyle) => `http-${style}`;
/** Styles whose source reads the reset header as seconds to wait; the rest as an epoch second. */
const SECONDS_RESET: readonly CatalogStyle[] = ['cursor', 'link-header', 'offset', 'search'];

let partner: PartnerServer;
let kit: JobKit;

before(async () => {
  partner = await startPartner({ port: 0, catalogRecordCount: () => RECORDS, catalogToken: CATALOG_TOKEN });
  kit = await jobTestKit({ secrets: { [CATALOG_SECRET_REF]: CATALOG_TOKEN } });
  for (const style of CATALOG_STYLES) {
    const unit = SECONDS_RESET.includes(style) ? 'seconds' : 'epoch';
    await kit.addSource({
      id: idOf(style),
      job: 'http',
      baseUrl: partner.url,
      credentialsRef: CATALOG_SECRET_REF,
      pageSize: PAGE_SIZE,
      retryPolicy: 'partnerHttpQuick',
      config: catalogConfig(style, { rateLimit: { resetHeader: 'X-RateLimit-Reset', unit } }),
    });
  }
});
after(async () => {
  await kit?.close();
  await partner?.close();
});

type Handle = WorkflowHandle<typeof fetchRecordsWorkflow>;

/** Starts one run per style for `date`; returns the handles. */
async function startAll(date: string): Promise<Map<CatalogStyle, Handle>> {
  const ctx = { temporal: kit.client, prisma: kit.prisma, taskQueue: kit.worker.taskQueue };
  const handles = new Map<CatalogStyle, Handle>();
  for (const style of CATALOG_STYLES) {
    handles.set(style, (await startFetch(ctx, { sourceId: idOf(style), date, requestedBy: 'test' })).handle);
  }
  return handles;
}

/** Every style's run of `date` succeeded, storing the partner's records exactly once. */
async function assertEveryRecordOnce(date: string): Promise<void> {
  const expected = [...(await catalogIds(partner.url, date))].sort();
  assert.equal(expected.length, RECORDS);
  for (const style of CATALOG_STYLES) {
    const sourceId = idOf(style);
    const run = await kit.prisma.fetchRun.findFirstOrThrow({
      where: { sourceId, businessDate: new Date(`${date}T00:00:00Z`) },
    });
    assert.deepEqual([run.status, run.recordsStored, run.pagesStored], ['succeeded', RECORDS, 2], style);
    assert.equal(
      await kit.prisma.runCursor.count({ where: { fetchRunId: run.id } }),
      0,
      'a succeeded run forgets its cursors',
    );
    const rows = await kit.prisma.fetchedRecord.findMany({
      where: { sourceId, businessDate: new Date(`${date}T00:00:00Z`) },
      select: { externalId: true },
    });
    assert.deepEqual(
      rows.map((r) => r.externalId).sort(),
      expected,
      `${style}: the partner's records, once each`,
    );
    const events = await kit.prisma.outboxEvent.findMany({
      where: { aggregateId: run.id, topic: PAGE_STORED_TOPIC },
    });
    const listed = events.flatMap((e) => (e.payload as { externalIds: string[] }).externalIds);
    assert.deepEqual([...listed].sort(), expected, `${style}: every id in exactly one page event`);
  }
  assert.equal(await kit.prisma.fetchedPage.count(), 0, 'no staged page left behind');
}

describe('declarative http sources, one per pagination style', () => {
  it(
    'http-sources: each style stores every record of several pages once, with its credential on every call',
    { timeout: 120_000 },
    async () => {
      const handles = await startAll(DATE);
      await kit.worker.run(() => Promise.all([...handles.values()].map((h) => h.result())));
      await assertEveryRecordOnce(DATE);
      for (const style of CATALOG_STYLES) {
        const calls = partner.ledger.entries({ style, date: DATE });
        // `none` serves all 60 at once: read once, stored over two pages of 40 (the rest carried).
        if (style === 'none') assert.equal(calls.length, 1, 'none: one partner request');
        else assert.ok(calls.length >= 2, `${style}: several partner requests (${calls.length})`);
        assert.deepEqual(
          [...new Set(calls.map((c) => `${c.credential}/${c.authorized}/${c.status}`))],
          [`${CREDENTIAL_OF[style]}/true/200`],
          `${style}: the configured credential on every call`,
        );
      }
    },
  );

  it(
    'http-sources: a 429 with Retry-After, then one with only the reset header, are waited out; still once each',
    { timeout: 120_000 },
    async () => {
      for (const style of CATALOG_STYLES) {
        const unit = SECONDS_RESET.includes(style) ? 'seconds' : 'epoch';
        const target = {
          route: 'catalog' as const,
          style,
          date: RATE_LIMITED_DATE,
          kind: 'status' as const,
          status: 429,
        };
        partner.faults.add({ ...target, retryAfter: '1', times: 1 });
        partner.faults.add({ ...target, rateLimitReset: RESET_S, rateLimitResetStyle: unit, times: 1 });
      }
      const handles = await startAll(RATE_LIMITED_DATE);
      await kit.worker.run(() => Promise.all([...handles.values()].map((h) => h.result())));
      await assertEveryRecordOnce(RATE_LIMITED_DATE);
      for (const style of CATALOG_STYLES) {
        const [first, second, third] = partner.ledger.entries({ style, date: RATE_LIMITED_DATE });
        assert.deepEqual([first?.status, second?.status, third?.status], [429, 429, 200], style);
        const waited = (a?: { at: string }, b?: { at: string }) =>
          Date.parse(b?.at ?? '') - Date.parse(a?.at ?? '');
        assert.ok(
          waited(first, second) >= 900,
          `${style}: Retry-After 1 s honoured (${waited(first, second)} ms)`,
        );
        // An epoch reset is whole seconds: at least RESET_S - 1 s remain when it is read.
        const least = (SECONDS_RESET.includes(style) ? RESET_S : RESET_S - 1) * 1000 - 100;
        assert.ok(
          waited(second, third) >= least,
          `${style}: reset header honoured (${waited(second, third)} ms)`,
        );
      }
    },
  );

  it(
    'http-sources: a worker SIGKILLed after its first stored page; another finishes every style, nothing twice; the token leaks nowhere',
    { timeout: 300_000 },
    async () => {
      const worker = spawnWorker({
        DATABASE_URL: kit.db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        DURABLE_FETCH_TASK_QUEUE: kit.worker.taskQueue,
        PARTNER_PAGE_LIMIT: '50',
        LOG_LEVEL: 'debug',
        DURABLE_FETCH_CRASH_POINT: 'after-commit',
        [CATALOG_SECRET_REF]: CATALOG_TOKEN,
      });
      try {
        await worker.waitFor(/worker polling task queue/, 120_000);
        const handles = await startAll(CRASH_DATE);
        const exit = await within(worker.ended, 90_000, () => `the worker to die:\n${worker.output()}`);
        assert.deepEqual(exit, { code: null, signal: 'SIGKILL' });
        assert.match(worker.output(), /crash point after-commit: SIGKILL/);
        await kit.worker.run(() =>
          within(Promise.all([...handles.values()].map((h) => h.result())), 180_000, () => 'the runs to end'),
        );
        await assertEveryRecordOnce(CRASH_DATE);

        // The token, and the basic credential it is part of, in no place we keep or show.
        const forms = [CATALOG_TOKEN, Buffer.from(`demo:${CATALOG_TOKEN}`).toString('base64')];
        const places: [string, string][] = [["the killed worker's log (debug)", worker.output()]];
        for (const [style, handle] of handles) {
          const history = await kit.client.workflowService.getWorkflowExecutionHistory({
            namespace: 'default',
            execution: { workflowId: handle.workflowId },
          });
          places.push([`${style}'s workflow history`, JSON.stringify(history.history?.events ?? [])]);
        }
        const tables = await kit.prisma.$queryRaw<{ t: string }[]>`
        SELECT string_agg(to_jsonb(x)::text, ' ') AS t FROM (
          SELECT to_jsonb(r) AS x FROM fetch_run r UNION ALL SELECT to_jsonb(e) FROM outbox_event e
          UNION ALL SELECT to_jsonb(d) FROM dead_letter d UNION ALL SELECT to_jsonb(s) FROM source s
          UNION ALL SELECT to_jsonb(i) FROM idempotency_record i UNION ALL SELECT to_jsonb(a) FROM audit_entry a
          UNION ALL SELECT to_jsonb(f) FROM fetched_record f) rows(x)`;
        places.push(['the database', tables[0]?.t ?? '']);
        const env = {
          DATABASE_URL: kit.db.url,
          TEMPORAL_ADDRESS: temporalAddress(),
          [CATALOG_SECRET_REF]: CATALOG_TOKEN,
        };
        for (const style of ['page-number', 'link-header'] as const) {
          const tried = await runCli(['sources', 'try', idOf(style), '--date', DATE, '--json'], env);
          assert.equal(tried.code, 0, tried.stderr);
          places.push([`sources try ${style}`, tried.stdout + tried.stderr]);
        }
        const shown = await runCli(['sources', 'show', idOf('page-number'), '--json'], env);
        places.push(['sources show', shown.stdout + shown.stderr]);
        for (const [where, text] of places) {
          assert.ok(text.length > 0, `${where} was read`);
          for (const form of forms) assert.ok(!text.includes(form), `the token is not in ${where}`);
        }
      } finally {
        await worker.stop('SIGKILL', 5_000);
      }
    },
  );
});
