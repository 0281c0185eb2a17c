// Conformance of the declarative `http` job with the list APIs teams actually have: each of the demo
// partner's twelve imitations (partner/apis/) read with configuration only (test/helpers/
// partner-apis.ts), through one real worker on real Temporal and PostgreSQL, every case at once.
// For each API and each of its hostile habits:
// - a run that must succeed stores every record the partner lists exactly once (its own list is the
//   judge) and asks the partner for exactly the pages it needs: no page twice, also when the
//   partner serves pages larger than asked, and the refused requests are the habit's alone;
// - a rate limit in the API's own form (a 429 with Retry-After, GitHub's 403 with its reset epoch,
//   HubSpot's interval header, an error inside a 200, a GraphQL cost throttle) is waited out for
//   at least as long as the partner asked;
// - an error inside a 200, a loop, the org's daily limit: the run fails with the partner's words,
//   and its dead letter names them; never `succeeded` with records missing;
// - `sources try` reads every API to its end and says why it ended, writing nothing.
// Requirements: every record once (R3, R5), retries only of what is transient and as long as the
// partner asks (R7), a failure reason that is the partner's, redacted (R11).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { API_NAMES, type ApiName, type HabitSpec } from '../partner/apis/index.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import type { fetchRecordsWorkflow } from '../workflows/fetch-records.ts';
import { type CliResult, runCli } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';
import { API_SECRET_REFS, apiBaseUrl, apiConfig, apiSecrets } from './helpers/partner-apis.ts';
import { temporalAddress } from './helpers/temporal.ts';

/** Records each API holds per scope: three pages of 10, the last one short. */
const RECORDS = 23;
/** Records asked per partner request (the source's page size). */
const PAGE = 10;
const PAGES = Math.ceil(RECORDS / PAGE);

interface Case {
  api: ApiName;
  name: string;
  /** The habits switched on for this case's date (or, for the undated lists, the API). */
  habits?: Omit<HabitSpec, 'api' | 'date'>[];
  /**
   * Partner requests the run makes: the pages it needs, plus each refusal or redirect. Absent where
   * the partner's page sizes decide (the engine asks for what fits its stored page): then every
   * record served exactly once is what shows that no page was asked for twice.
   */
  requests?: number;
  /** Seconds the partner asks to wait: the next request comes no sooner. */
  waitS?: number;
  /** A secret other than the API's own (a wrong key), under its own reference. */
  wrongSecret?: string;
  /** Top-level config keys in place of the API's (a config mistake a user could make). */
  config?: Record<string, unknown>;
  /** A case whose run must fail: the error type and what its dead letter says. */
  fails?: { type: string; code: RegExp; message: RegExp };
}

const once = (habit: string, afterRequests = 1, extra: Partial<HabitSpec> = {}) => ({
  habit,
  afterRequests,
  ...extra,
});
const always = (habit: string, pageSize: number) => ({ habit, pageSize, times: 'always' as const });

const CASES: Case[] = [
  { api: 'graph', name: 'plain', requests: PAGES },
  // Pages of 20 where $top asked 10: 2 requests, each stored whole (no second request for the rest).
  { api: 'graph', name: 'server-pages', habits: [always('server_page_size', 20)], requests: 2 },
  { api: 'graph', name: 'throttled', habits: [once('throttled')], requests: PAGES + 1, waitS: 1 },
  { api: 'stripe', name: 'plain', requests: PAGES },
  { api: 'stripe', name: 'rate-limited', habits: [once('rate_limited')], requests: PAGES + 1 },
  {
    api: 'stripe',
    name: 'loop',
    // The third page sends the run back to the first page's cursor: a loop over the run.
    habits: [once('loop', 1)],
    requests: 3,
    fails: { type: 'InvalidResponse', code: /CURSOR_LOOP/, message: /cursor/i },
  },
  // A wrong key: refused in Stripe's words, the key masked by Stripe itself.
  {
    api: 'stripe',
    name: 'wrong-key',
    wrongSecret: 'sk_test_wrongKeyForConformance9z',
    requests: 1,
    fails: { type: 'PermissionDenied', code: /401/, message: /Invalid API Key provided: sk_test_\*+\w{4}"/ },
  },
  // The mistake that once ended a run `succeeded` with records missing: the key with dots written
  // as a dotted path. Refused on the first page, naming the bracket form, never the end.
  {
    api: 'graph',
    name: 'dotted-key',
    config: {
      pagination: { ...graphPagination(), path: '@odata.nextLink', endWhen: ['absent'] },
    },
    requests: 1,
    fails: { type: 'InvalidResponse', code: /PATH_NOT_FOUND/, message: /write \['@odata\.nextLink'\]/ },
  },
  // A misspelled cursor path where a missing cursor is the end: a full first page without it is
  // refused, not taken as the last page.
  {
    api: 'x',
    name: 'misspelled-cursor',
    config: { pagination: { ...xPagination(), path: 'meta.next_tokn' } },
    requests: 1,
    fails: { type: 'InvalidResponse', code: /NEXT_CURSOR_MISSING/, message: /full page/ },
  },
  { api: 'notion', name: 'plain', requests: PAGES },
  { api: 'notion', name: 'rate-limited', habits: [once('rate_limited')], requests: PAGES + 1, waitS: 1 },
  { api: 'slack', name: 'plain', requests: PAGES },
  // Pages of 4 where 10 were asked: short pages that are not the end.
  { api: 'slack', name: 'short-pages', habits: [always('short_pages', 4)] },
  { api: 'slack', name: 'ratelimited', habits: [once('ratelimited')], requests: PAGES + 1, waitS: 1 },
  {
    api: 'slack',
    name: 'revoked',
    habits: [once('invalid_auth')],
    requests: 2,
    fails: { type: 'PermissionDenied', code: /PARTNER/, message: /invalid_auth/ },
  },
  { api: 'github-graphql', name: 'plain', requests: PAGES },
  {
    api: 'github-graphql',
    name: 'rate-limited',
    habits: [once('rate_limited', 1, { waitS: 2 })],
    requests: PAGES + 1,
    waitS: 2,
  },
  {
    api: 'github-graphql',
    name: 'timeout',
    habits: [once('query_timeout')],
    requests: 2,
    fails: { type: 'InvalidInput', code: /PARTNER/, message: /timeout/ },
  },
  // The old name answers 301 on the first request only: the next links name the new path.
  { api: 'github-rest', name: 'renamed', requests: PAGES + 1 },
  {
    api: 'github-rest',
    name: 'rate-limited',
    habits: [once('rate_limited', 1, { waitS: 2 })],
    requests: PAGES + 2,
    waitS: 2,
  },
  // One batch of 23 where 10 were asked for: one request, stored over as many pages as needed.
  { api: 'salesforce', name: 'one-batch', requests: 1 },
  {
    api: 'salesforce',
    name: 'server-batches',
    habits: [{ habit: 'server_batch', pageSize: 15 }],
    requests: 2,
  },
  {
    api: 'salesforce',
    name: 'request-limit',
    habits: [{ habit: 'server_batch', pageSize: 15 }, once('request_limit')],
    requests: 2,
    fails: { type: 'PermissionDenied', code: /PARTNER_RULE/, message: /TotalRequests Limit exceeded/ },
  },
  // The undated lists hold one collection: one case each, its habits in the same run.
  { api: 'hubspot', name: 'rate-limited', habits: [once('rate_limited')], requests: PAGES + 1, waitS: 1 },
  {
    api: 'zendesk',
    name: 'cursor-left-rate-limited',
    habits: [{ habit: 'cursor_on_last_page' }, once('rate_limited')],
    requests: PAGES + 1,
    waitS: 1,
  },
  { api: 'jira', name: 'plain', requests: PAGES },
  // maxResults capped at 4 below the 10 asked: short pages before the end, `total` decides.
  { api: 'jira', name: 'capped', habits: [always('max_results_cap', 4)] },
  { api: 'jira', name: 'rate-limited', habits: [once('rate_limited')], requests: PAGES + 1, waitS: 1 },
  { api: 'shopify', name: 'plain', requests: PAGES },
  { api: 'shopify', name: 'throttled', habits: [once('throttled')], requests: PAGES + 1 },
  { api: 'x', name: 'plain', requests: PAGES },
  // After the last posts, an empty page with a next token: read as the end (one request more).
  { api: 'x', name: 'empty-last-page', habits: [{ habit: 'empty_last_page' }], requests: PAGES + 1 },
  {
    api: 'x',
    name: 'rate-limited',
    habits: [once('rate_limited', 1, { waitS: 2 })],
    requests: PAGES + 1,
    waitS: 2,
  },
];

function graphPagination(): Record<string, unknown> {
  return apiConfig('graph').pagination as Record<string, unknown>;
}
function xPagination(): Record<string, unknown> {
  return apiConfig('x').pagination as Record<string, unknown>;
}

/** The habits that refuse a request for a while (the next request must wait). */
const WAIT_HABITS = new Set(['throttled', 'rate_limited', 'ratelimited']);

const idOf = (c: Case) => `conf-${c.api}-${c.name}`;
const wrongRef = (c: Case) => `DF_SECRET_CONF_${c.api}_${c.name}`.toUpperCase().replace(/-/g, '_');
const undated = (api: ApiName) => api === 'hubspot' || api === 'zendesk';
/** A date of its own per case: habits and the request log are matched by it. */
const dateOf = new Map(
  CASES.map((c, i) => [c, new Date(Date.UTC(2026, 6, 1 + i)).toISOString().slice(0, 10)]),
);
const date = (c: Case) => dateOf.get(c) ?? '';
/** A date no case ran, for `sources try`. */
const TRY_DATE = '2026-06-30';

let partner: PartnerServer;
let kit: JobKit;
const outcome = new Map<Case, { errorType: string | undefined }>();
let startedAt = 0;
let endedAt = 0;

before(async () => {
  partner = await startPartner({ port: 0, apiRecordCount: () => RECORDS });
  const wrong = Object.fromEntries(
    CASES.flatMap((c) => (c.wrongSecret ? [[wrongRef(c), c.wrongSecret]] : [])),
  );
  kit = await jobTestKit({ secrets: { ...apiSecrets(partner.apis.tokens), ...wrong } });
  for (const c of CASES) {
    await kit.addSource({
      id: idOf(c),
      job: 'http',
      baseUrl: apiBaseUrl(partner.url, c.api),
      credentialsRef: c.wrongSecret ? wrongRef(c) : API_SECRET_REFS[c.api],
      pageSize: PAGE,
      retryPolicy: 'partnerHttpQuick',
      config: apiConfig(c.api, c.config),
    });
    for (const habit of c.habits ?? []) {
      partner.apis.habits.add({ api: c.api, ...(undated(c.api) ? {} : { date: date(c) }), ...habit });
    }
  }
  // Every case at once, on one worker: the suite takes as long as its slowest case.
  const ctx = { temporal: kit.client, prisma: kit.prisma, taskQueue: kit.worker.taskQueue };
  const handles = new Map<Case, WorkflowHandle<typeof fetchRecordsWorkflow>>();
  startedAt = Date.now();
  for (const c of CASES) {
    handles.set(c, (await startFetch(ctx, { sourceId: idOf(c), date: date(c), requestedBy: 'test' })).handle);
  }
  await kit.worker.run(() =>
    Promise.all(
      [...handles].map(async ([c, handle]) => {
        try {
          await handle.result();
          outcome.set(c, { errorType: undefined });
        } catch (err) {
          outcome.set(c, { errorType: failureType(err) });
        }
      }),
    ),
  );
  endedAt = Date.now();
  partner.apis.habits.clear();
});
after(async () => {
  await kit?.close();
  await partner?.close();
});

/** The error type at the bottom of a workflow failure's cause chain. */
function failureType(err: unknown): string | undefined {
  let type: string | undefined;
  for (let e = err as { cause?: unknown; type?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.type === 'string') type = e.type;
  }
  return type;
}

/** The partner's requests of a case, oldest first. */
function requestsOf(c: Case) {
  // A refused credential is refused before the request names its date.
  if (c.wrongSecret) return partner.apis.requests.entries({ api: c.api, authorized: false });
  return partner.apis.requests.entries({ api: c.api, ...(undated(c.api) ? {} : { scope: date(c) }) });
}

/** What the partner answered a case, for assertion messages: `status[:habit][/records]` each. */
function summary(requests: ReturnType<typeof requestsOf>): string {
  const one = (r: (typeof requests)[number]) =>
    `${r.status}${r.habit ? `:${r.habit}` : ''}${r.records === undefined ? '' : `/${r.records}`}`;
  return requests.map(one).join(' ');
}

async function runOf(c: Case) {
  return kit.prisma.fetchRun.findFirstOrThrow({
    where: { sourceId: idOf(c), businessDate: new Date(`${date(c)}T00:00:00Z`) },
  });
}

/** A case that succeeded: the partner's records once each, the pages it needed, the waits honoured. */
async function assertConforms(c: Case): Promise<void> {
  const run = await runOf(c);
  const requests = requestsOf(c);
  const seen = summary(requests);
  assert.equal(
    run.status,
    'succeeded',
    `${idOf(c)}: ${run.errorClass} ${run.errorMessage} (partner saw ${seen})`,
  );
  const expected = partner.apis.ids(c.api, date(c));
  assert.equal(expected.length, RECORDS);
  const rows = await kit.prisma.fetchedRecord.findMany({
    where: { sourceId: idOf(c), businessDate: new Date(`${date(c)}T00:00:00Z`) },
    select: { externalId: true },
  });
  assert.deepEqual(
    rows.map((r) => r.externalId).sort(),
    [...expected].sort(),
    `${idOf(c)}: every record the partner lists, once`,
  );
  assert.equal(run.recordsStored, RECORDS, idOf(c));
  if (c.requests !== undefined) {
    assert.equal(requests.length, c.requests, `${idOf(c)}: partner requests = pages needed (saw ${seen})`);
  }
  // The answers that were pages: each position asked for once, each record served once.
  const pages = requests.filter((r) => r.records !== undefined);
  const positions = pages.map((r) => r.position);
  assert.equal(new Set(positions).size, positions.length, `${idOf(c)}: no page asked for twice (${seen})`);
  const served = pages.reduce((n, r) => n + (r.records ?? 0), 0);
  assert.equal(served, RECORDS, `${idOf(c)}: every record served once, none asked for again (${seen})`);
  assert.ok(
    requests.every((r) => r.authorized),
    `${idOf(c)}: its credential, in its API's form, on every request`,
  );
  assertWaited(c, requests);
}

/** After each refusal that asked for a wait, the next request came no sooner than asked. */
function assertWaited(c: Case, requests: ReturnType<typeof requestsOf>): void {
  if (c.waitS === undefined) return;
  const i = requests.findIndex((r) => r.habit !== undefined && WAIT_HABITS.has(r.habit));
  assert.ok(i >= 0 && requests[i + 1], `${idOf(c)}: the partner refused once, then was asked again`);
  const waited = Date.parse(requests[i + 1]?.at ?? '') - Date.parse(requests[i]?.at ?? '');
  // An epoch reset is a whole second (rounded up by the partner): more than waitS − 1 s remain
  // when it is read, so those cases ask for 2 s.
  const epoch = c.api === 'github-rest' || c.api === 'github-graphql' || c.api === 'x';
  const least = (epoch ? c.waitS - 1 : c.waitS) * 1000 - 100;
  assert.ok(waited >= Math.max(0, least), `${idOf(c)}: waited ${waited} ms, asked ${c.waitS} s`);
}

/**
 * A case that must fail: dead-lettered with the partner's words, and a dead letter naming them.
 * Returns the dead letter's code and message, for the test's diagnostics.
 */
async function assertRefused(c: Case): Promise<string> {
  const fails = c.fails;
  assert.ok(fails);
  const run = await runOf(c);
  const requests = requestsOf(c);
  const seen = summary(requests);
  assert.deepEqual(
    [run.status, outcome.get(c)?.errorType],
    ['dead_lettered', fails.type],
    `${idOf(c)}: ${run.errorMessage} (partner saw ${seen})`,
  );
  assert.match(run.errorMessage ?? '', fails.message, idOf(c));
  const letters = await kit.prisma.deadLetter.findMany({ where: { sourceId: idOf(c) } });
  assert.equal(letters.length, 1, `${idOf(c)}: one dead letter`);
  const [letter] = letters;
  assert.equal(letter?.errorType, fails.type);
  assert.match(letter?.errorCode ?? '', fails.code, `${idOf(c)}: ${letter?.errorCode}`);
  assert.match(letter?.errorMessage ?? '', fails.message, `${idOf(c)}: the dead letter names it`);
  for (const secret of [partner.apis.tokens[c.api], c.wrongSecret ?? partner.apis.tokens[c.api]]) {
    assert.ok(!letter?.errorMessage.includes(secret), `${idOf(c)}: no secret in the dead letter`);
  }
  assert.equal(requests.length, c.requests, `${idOf(c)}: no request after the refusal (saw ${seen})`);
  const stored = await kit.prisma.fetchedRecord.count({ where: { sourceId: idOf(c) } });
  assert.ok(stored < RECORDS, `${idOf(c)}: a failed run, whatever it stored before (${stored})`);
  return `${idOf(c)}: ${letter?.errorType} ${letter?.errorCode}: ${letter?.errorMessage}`;
}

describe('conformance: the http job against twelve widely used list APIs', () => {
  it('every case ended, all of them run at once on one worker', (t) => {
    assert.equal(outcome.size, CASES.length);
    t.diagnostic(`${CASES.length} runs in ${endedAt - startedAt} ms`);
  });

  for (const api of API_NAMES) {
    it(`${api}: ${CASES.filter((c) => c.api === api)
      .map((c) => c.name)
      .join(', ')}`, async (t) => {
      for (const c of CASES.filter((x) => x.api === api)) {
        if (c.fails) t.diagnostic(await assertRefused(c));
        else await assertConforms(c);
      }
    });
  }

  it('a succeeded run leaves nothing behind: no staged page, no run cursor', async () => {
    const succeeded = await kit.prisma.fetchRun.findMany({
      where: { status: 'succeeded' },
      select: { id: true, sourceId: true },
    });
    assert.equal(succeeded.length, CASES.filter((c) => !c.fails).length);
    // A failed run keeps what it staged, for a replay to resume from; a succeeded one keeps nothing.
    const staged = await kit.prisma.fetchedPage.findMany({ select: { key: true } });
    const ofSucceeded = staged.filter((p) => succeeded.some((r) => p.key.includes(`:${r.sourceId}:`)));
    assert.deepEqual(ofSucceeded, [], 'no staged page of a succeeded run');
    assert.equal(
      await kit.prisma.runCursor.count({ where: { fetchRunId: { in: succeeded.map((r) => r.id) } } }),
      0,
      'a succeeded run forgets its cursors',
    );
  });

  it(
    'sources try reads each API to its end, says why it ended, and writes nothing',
    { timeout: 180_000 },
    async (t) => {
      const counts = () =>
        kit.prisma.$queryRaw<{ t: string; n: bigint }[]>`
        SELECT 'fetch_run' AS t, count(*) AS n FROM fetch_run UNION ALL
        SELECT 'fetched_record', count(*) FROM fetched_record UNION ALL
        SELECT 'fetched_page', count(*) FROM fetched_page UNION ALL
        SELECT 'run_cursor', count(*) FROM run_cursor UNION ALL
        SELECT 'outbox_event', count(*) FROM outbox_event UNION ALL
        SELECT 'dead_letter', count(*) FROM dead_letter UNION ALL
        SELECT 'idempotency_record', count(*) FROM idempotency_record UNION ALL
        SELECT 'audit_entry', count(*) FROM audit_entry`;
      const before = await counts();
      const env = {
        DATABASE_URL: kit.db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        ...apiSecrets(partner.apis.tokens),
      };
      // A source of each API as documented (the undated ones have only their one case), in this process
      // (a child's start-up costs seconds), and one through the real command, as a user runs it.
      const sources = API_NAMES.map(
        (api) => CASES.find((c) => c.api === api && !c.config && !c.fails) as Case,
      );
      const args = (c: Case) => ['sources', 'try', idOf(c), '--date', TRY_DATE, '--pages', '10', '--json'];
      const tried: CliResult[] = [];
      for (const c of sources) tried.push(await runCliInProcess(args(c), env));
      const notion = sources.findIndex((c) => c.api === 'notion');
      tried[notion] = await runCli(args(sources[notion] as Case), env);
      for (const [i, c] of sources.entries()) {
        const result = tried[i];
        assert.equal(result?.code, 0, `${idOf(c)}: ${result?.stdout} ${result?.stderr}`);
        const report = JSON.parse(result?.stdout ?? '{}') as {
          records: number;
          complete: boolean;
          end?: string;
          failure?: unknown;
        };
        assert.deepEqual(
          [report.records, report.complete, report.failure],
          [RECORDS, true, undefined],
          `${idOf(c)}: ${result?.stdout}`,
        );
        assert.ok(report.end, `${idOf(c)}: says why paging is complete`);
        t.diagnostic(`${c.api}: ${report.end}`);
      }
      assert.deepEqual(await counts(), before, 'sources try wrote nothing');
    },
  );
});
