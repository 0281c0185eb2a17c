// The demo partner's parent → child imitation (partner/apis/github-org.ts) over real HTTP: walked
// as GitHub's documentation tells a client to (Link rel="next"), it yields exactly what its admin
// view says it holds per repository; its switches show as GitHub shows them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_GITHUB_ORG_TOKEN, type Holding } from '../partner/apis/github-org.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';

let partner: PartnerServer;
let base: string;
const auth = { authorization: `Bearer ${DEFAULT_GITHUB_ORG_TOKEN}` };

before(async () => {
  partner = await startPartner({ port: 0, githubOrg: { repos: 8 } });
  base = `${partner.url}/apis/github-org`;
});
after(() => partner?.close());

/** Every item of a list, following its Link rel="next" from `url`. */
async function walk(url: string): Promise<{ items: Record<string, unknown>[]; requests: number }> {
  const items: Record<string, unknown>[] = [];
  let next: string | undefined = url;
  let requests = 0;
  while (next !== undefined) {
    const res = await fetch(next, { headers: auth });
    requests += 1;
    assert.equal(res.status, 200, next);
    items.push(...((await res.json()) as Record<string, unknown>[]));
    next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return { items, requests };
}

describe('partner: github-org (parent → child)', () => {
  it('walked by its Link headers, it yields what its admin view holds per repository; issue numbers repeat across repositories', async () => {
    const admin = (await (await fetch(`${partner.url}/_admin/github-org`)).json()) as { repos: Holding[] };
    assert.equal(admin.repos.length, 8);
    assert.ok(
      admin.repos.some((r) => r.issues.length === 0),
      'a repository without issues',
    );
    const repos = await walk(`${base}/orgs/acme/repos?per_page=3`);
    assert.deepEqual([repos.items.map((r) => r.id), repos.requests], [admin.repos.map((r) => r.id), 3]);
    for (const repo of admin.repos) {
      const issues = await walk(`${base}/repos/acme/${repo.name}/issues?per_page=4&state=all`);
      assert.deepEqual(
        issues.items.map((i) => i.number),
        repo.issues,
        repo.name,
      );
      assert.equal(issues.requests, Math.max(1, Math.ceil(repo.issues.length / 4)));
    }
  });

  it('a wrong token is 401; a repository deleted before its issues are asked for is 404 and gone from the list; a 429 carries Retry-After', async () => {
    const org = partner.githubOrg;
    const wrong = await fetch(`${base}/orgs/acme/repos`, { headers: { authorization: 'Bearer nope' } });
    assert.deepEqual(
      [wrong.status, ((await wrong.json()) as { message: string }).message],
      [401, 'Bad credentials'],
    );
    org.rateLimited = { seq: 1, page: 1, waitS: 2 };
    const limited = await fetch(`${base}/repos/acme/ledger-001/issues`, { headers: auth });
    assert.deepEqual([limited.status, limited.headers.get('retry-after')], [429, '2']);
    org.deleteBeforeIssues.add(2);
    const gone = await fetch(`${base}/repos/acme/ledger-002/issues`, { headers: auth });
    assert.deepEqual([gone.status, ((await gone.json()) as { message: string }).message], [404, 'Not Found']);
    const repos = await walk(`${base}/orgs/acme/repos`);
    assert.ok(!repos.items.some((r) => r.name === 'ledger-002'), 'gone from the repository list too');
    const admin = (await (await fetch(`${partner.url}/_admin/github-org`)).json()) as { deleted: number[] };
    assert.deepEqual(admin.deleted, [700_002]);
    const log = (await (await fetch(`${partner.url}/_admin/github-org/requests`)).json()) as {
      requests: { list: string; repo?: string; status: number }[];
    };
    assert.ok(log.requests.some((r) => r.repo === 'ledger-002' && r.status === 404));
  });
});
