// A parent → child `http` source (docs/http-sources.md, "Parent → child lists") on real Temporal,
// PostgreSQL and HTTP, against the demo partner's GitHub organization imitation: 40 repositories
// paged by page number, each one's issues paged by its Link header, issue numbers repeating across
// repositories. The partner's own list of what it holds (per repository) is the judge:
// - every issue of every repository is stored once, under `<repositoryId>:<number>` (R3), a
//   repository deleted between the repository page and its issues (404) skipped, a 429 with
//   Retry-After waited out (R7);
// - a worker process SIGKILLed while it waits for repository 37's third issues page: once another
//   worker finishes the run, the partner's request log shows it resumed at that very request,
//   asking nothing again of repositories 1–36 (nor the repository list), and the records are
//   complete (R12a).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFetch } from '../client/start-fetch.ts';
import { DEFAULT_GITHUB_ORG_TOKEN, type GithubOrgRequest } from '../partner/apis/github-org.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';
import { spawnWorker, within } from './helpers/process.ts';
import { temporalAddress } from './helpers/temporal.ts';

const SECRET_REF = 'DF_SECRET_GITHUB_ORG';
const SOURCE = 'github-org-issues';
const REPOS = 40;
/** Issues per repository: none for every sixth, else 1..12; repository 37 has three pages of 4 and some. */
const issuesOf = (seq: number) => (seq === 37 ? 11 : seq % 6 === 0 ? 0 : 1 + ((seq * 7) % 12));
const DELETED = 9;
const DATE = '2026-10-05';
const CRASH_DATE = '2026-10-06';

const CONFIG = {
  request: { path: '/orgs/acme/repos', query: { type: 'all' } },
  auth: { type: 'bearer' },
  pagination: { type: 'page_number', limitParam: 'per_page', limit: 15 },
  children: {
    request: { path: '/repos/{parent.owner.login}/{parent.name}/issues', query: { state: 'all' } },
    records: { id: 'number' },
    pagination: { type: 'link_header', limitParam: 'per_page', limit: 4 },
  },
};

let partner: PartnerServer;
let kit: JobKit;

before(async () => {
  partner = await startPartner({ port: 0, githubOrg: { repos: REPOS, issues: issuesOf } });
  kit = await jobTestKit({ secrets: { [SECRET_REF]: DEFAULT_GITHUB_ORG_TOKEN } });
  await kit.addSource({
    id: SOURCE,
    job: 'http',
    baseUrl: `${partner.url}/apis/github-org`,
    credentialsRef: SECRET_REF,
    pageSize: 50,
    retryPolicy: 'partnerHttpQuick',
    config: CONFIG,
  });
});
after(async () => {
  await kit?.close();
  await partner?.close();
});

/** What the partner holds now, as the source keys it. */
function partnerIds(): string[] {
  return partner.githubOrg
    .holdings()
    .flatMap((r) => r.issues.map((n) => `${r.id}:${n}`))
    .sort();
}

async function storedIds(date: string): Promise<string[]> {
  const rows = await kit.prisma.fetchedRecord.findMany({
    where: { sourceId: SOURCE, businessDate: new Date(`${date}T00:00:00Z`) },
    select: { externalId: true },
  });
  return rows.map((r) => r.externalId).sort();
}

const label = (r: GithubOrgRequest) => `${r.list === 'repos' ? 'repos' : r.repo}@${r.page}:${r.status}`;

describe('http source with parent → child lists', () => {
  it('parent → child: every issue of every repository once, a repository deleted mid-run skipped, a 429 waited out', async (t) => {
    const org = partner.githubOrg;
    org.deleteBeforeIssues.add(DELETED);
    org.rateLimited = { seq: 20, page: 2, waitS: 1 };
    const started = Date.now();
    const run = await kit.run(SOURCE, DATE);
    assert.equal(run.status, 'succeeded', run.errorType);
    const expected = partnerIds();
    assert.equal(org.holdings().length, REPOS - 1, 'the partner deleted one repository');
    assert.deepEqual(org.deleted(), [700_000 + DELETED]);
    const stored = await storedIds(DATE);
    const missing = expected.filter((id) => !stored.includes(id));
    assert.deepEqual(missing, [], 'no record of the partner missing');
    assert.deepEqual(stored, expected, "the partner's own list, once each");
    assert.ok(
      stored.includes('700001:1') && stored.includes('700002:1'),
      'issue 1 of two repositories: two records',
    );
    const log = org.requests();
    assert.ok(log.some((r) => label(r) === `ledger-${String(DELETED).padStart(3, '0')}@1:404`));
    const limited = log.findIndex((r) => r.status === 429);
    assert.ok(limited >= 0, 'the 429 came');
    assert.equal(
      label(log[limited + 1]!),
      label({ ...log[limited]!, status: 200 }),
      'the same request again after it',
    );
    const issues = log.filter((r) => r.list === 'issues' && r.status !== 429);
    assert.equal(
      new Set(issues.map(label)).size,
      issues.length,
      'no issues page asked twice (but the refused one)',
    );
    assert.deepEqual(
      log.filter((r) => r.list === 'repos').map(label),
      ['repos@1:200', 'repos@1:200', 'repos@2:200', 'repos@3:200', 'repos@4:200'],
      'page 1 read again after its deleted repository, for the one that moved up into it; 4 is the empty end',
    );
    assert.ok(
      log.some((r) => label(r) === 'ledger-016@1:200'),
      'repository 16, moved up to page 1, read',
    );

    // `sources try` shows the records as a run keys them.
    const tried = await runCliInProcess(
      ['sources', 'try', SOURCE, '--date', DATE, '--pages', '2', '--json'],
      {
        DATABASE_URL: kit.db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        [SECRET_REF]: DEFAULT_GITHUB_ORG_TOKEN,
      },
    );
    assert.equal(tried.code, 0, tried.stderr);
    const report = JSON.parse(tried.stdout) as { pages: { ids: string[] }[]; complete: boolean };
    assert.deepEqual(
      report.pages.map((p) => p.ids),
      [
        ['700001:1', '700001:2', '700001:3', '700001:4'],
        ['700001:5', '700001:6', '700001:7', '700001:8'],
      ],
    );
    t.diagnostic(
      `${stored.length} records from ${log.length} requests (${log.filter((r) => r.list === 'repos').length} repository pages), ${run.row.pagesStored} stored pages, ${Date.now() - started} ms`,
    );
  });

  it('parent → child: a worker SIGKILLed in repository 37’s third issues page; the run resumes at that request and completes', async (t) => {
    const org = partner.githubOrg;
    const earlier = org.requests().length;
    let arrived!: () => void;
    const held = new Promise<void>((resolve) => (arrived = resolve));
    org.hold = { seq: 37, page: 3, ms: 60_000, arrived };
    const worker = spawnWorker({
      DATABASE_URL: kit.db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: kit.worker.taskQueue,
      [SECRET_REF]: DEFAULT_GITHUB_ORG_TOKEN,
    });
    const started = Date.now();
    let killedAt: number | undefined;
    try {
      await worker.waitFor(/worker polling task queue/, 120_000);
      const ctx = { temporal: kit.client, prisma: kit.prisma, taskQueue: kit.worker.taskQueue };
      const { handle } = await startFetch(ctx, { sourceId: SOURCE, date: CRASH_DATE, requestedBy: 'test' });
      await within(held, 90_000, () => `repository 37's third page to be asked for:\n${worker.output()}`);
      killedAt = org.requests().length;
      worker.child.kill('SIGKILL');
      assert.deepEqual(await worker.ended, { code: null, signal: 'SIGKILL' });
      await kit.worker.run(() => within(handle.result(), 120_000, () => 'the run to end'));
    } finally {
      worker.child.kill('SIGKILL');
    }
    const run = await kit.prisma.fetchRun.findFirstOrThrow({
      where: { sourceId: SOURCE, businessDate: new Date(`${CRASH_DATE}T00:00:00Z`) },
    });
    assert.equal(run.status, 'succeeded');
    assert.deepEqual(await storedIds(CRASH_DATE), partnerIds(), "the partner's own list, once each");

    const log = org.requests().slice(earlier);
    assert.ok(killedAt !== undefined);
    killedAt -= earlier;
    const before = log.slice(0, killedAt);
    const resumed = log.slice(killedAt);
    assert.equal(label(before.at(-1)!), 'ledger-037@3:200', 'killed while that request was held');
    assert.equal(label(resumed[0]!), 'ledger-037@3:200', 'the run resumed at that very request');
    const seqOf = (r: GithubOrgRequest) => Number(r.repo?.slice('ledger-'.length));
    const again = resumed.filter(
      (r) => r.list === 'issues' && (seqOf(r) < 37 || (seqOf(r) === 37 && r.page < 3)),
    );
    assert.deepEqual(
      again.map(label),
      [],
      'nothing of repositories 1-36, nor of pages 1-2 of 37, asked again',
    );
    // The repository list's last page (31-40) was read before the crash; after it, only the empty
    // page that ends the list.
    assert.deepEqual(
      resumed.filter((r) => r.list === 'repos').map(label),
      ['repos@4:200'],
      'the repository list is not read again',
    );
    t.diagnostic(
      `${log.length} requests (${before.length} before the kill, ${resumed.length} after), ${Date.now() - started} ms`,
    );
  });
});
