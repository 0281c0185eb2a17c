// A parent → child partner: an imitation of GitHub REST's organization repositories and each
// repository's issues (`GET /orgs/{org}/repos`, then `GET /repos/{owner}/{repo}/issues`), built from
// GitHub's documentation ("List organization repositories", "List repository issues", "Using
// pagination in the REST API", "Rate limits for the REST API"), each fact a habit:
// - both lists are the body itself, paged by `page` (1-based) and `per_page` (default 30, at most
//   100: more is served as 100), the next page in the `Link` header (`rel="next"`, absolute URL;
//   also `prev`, `first`, `last`), absent on the last page; a page past the end is `[]`;
// - an issue's `number` counts within its repository: two repositories both have an issue 1;
// - a repository that has none lists no issues: `[]` with no Link header;
// - a repository deleted (or made private) answers 404 `{ "message": "Not Found" }` on its issues,
//   also when it was in the repository list a moment before (switch `deleteBeforeIssues`);
// - the secondary rate limit: 429 with `Retry-After` in seconds (switch `rateLimited`);
// - a wrong token is 401 `{ "message": "Bad credentials" }`.
// Unlike partner/apis/'s flat lists it remembers (a deleted repository stays deleted), keeps its
// own request log, and its admin view (`GET /_admin/github-org`) lists what it holds per
// repository: the partner's own list to judge a run by.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { secretEquals } from '../auth.ts';
import { HttpError, sendJson } from '../http-io.ts';
import { hash32 } from '../records.ts';
import { bearerOf } from './kit.ts';

/** Base path of the imitation, below the partner's URL: the source's base URL. */
export const GITHUB_ORG_PREFIX = '/apis/github-org';
/** Admin view: GET lists what it holds per repository, and `/requests` its request log. */
export const GITHUB_ORG_ADMIN_PATH = '/_admin/github-org';
export const GITHUB_ORG = 'acme';
export const DEFAULT_GITHUB_ORG_TOKEN = 'ghp_demoGithubOrgToken';

const DEFAULT_PER_PAGE = 30;
const MAX_PER_PAGE = 100;
const DOCS = 'https://docs.github.com/rest';
const REPO_ID_BASE = 700_000;
const ISSUES_ROUTE = /^\/repos\/([^/]+)\/([^/]+)\/issues$/;

export interface GithubOrgOptions {
  token?: string;
  /** Repositories the organization holds (default 40). */
  repos?: number;
  /**
   * Issues repository `seq` (1-based) holds. Default: none for every sixth, else 1..12 from a hash.
   */
  issues?: (seq: number) => number;
}

export interface Repo {
  id: number;
  node_id: string;
  name: string;
  full_name: string;
  owner: { login: string; id: number; type: 'Organization' };
  private: false;
  url: string;
  open_issues_count: number;
}

export interface Issue {
  id: number;
  node_id: string;
  number: number;
  title: string;
  state: 'open';
  repository_url: string;
  created_at: string;
}

/** One request the imitation answered. */
export interface GithubOrgRequest {
  seq: number;
  /** `repos` (the organization's list) or `issues` (a repository's). */
  list: 'repos' | 'issues';
  /** The repository whose issues were asked for. */
  repo?: string;
  page: number;
  status: number;
  /** Records the answer carried. */
  records: number;
}

/** What the organization holds now: each repository and its issues' numbers, in list order. */
export interface Holding {
  id: number;
  name: string;
  issues: number[];
}

const pad = (seq: number) => String(seq).padStart(3, '0');
const repoName = (seq: number) => `ledger-${pad(seq)}`;
const seqOf = (name: string) => (/^ledger-(\d{3})$/.exec(name) ? Number(name.slice(7)) : undefined);

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

export class PartnerGithubOrg {
  readonly token: string;
  readonly repoCount: number;
  readonly #issues: (seq: number) => number;
  readonly #deleted = new Set<number>();
  readonly #log: GithubOrgRequest[] = [];
  /** Repositories (by `seq`) deleted just before their issues are first asked for. */
  deleteBeforeIssues = new Set<number>();
  /** The issues request (repository `seq`, `page`) answers 429 with `Retry-After: waitS`, once. */
  rateLimited: { seq: number; page: number; waitS: number } | undefined;
  /**
   * An issues request (repository `seq`, `page`) held for `ms` before it is answered; `arrived`
   * resolves when it comes (a test kills the process that sent it meanwhile).
   */
  hold: { seq: number; page: number; ms: number; arrived: () => void } | undefined;

  constructor(options: GithubOrgOptions = {}) {
    this.token = options.token ?? DEFAULT_GITHUB_ORG_TOKEN;
    this.repoCount = options.repos ?? 40;
    this.#issues = options.issues ?? ((seq) => (seq % 6 === 0 ? 0 : 1 + (hash32(`github-org|${seq}`) % 12)));
  }

  /** The repository of `seq` (1-based), as the list serves it. */
  repo(seq: number, base: string): Repo {
    const name = repoName(seq);
    return {
      id: REPO_ID_BASE + seq,
      node_id: `R_kgDO${pad(seq)}`,
      name,
      full_name: `${GITHUB_ORG}/${name}`,
      owner: { login: GITHUB_ORG, id: 9919, type: 'Organization' },
      private: false,
      url: `${base}/repos/${GITHUB_ORG}/${name}`,
      open_issues_count: this.#issues(seq),
    };
  }

  issue(seq: number, n: number, base: string): Issue {
    const id = (REPO_ID_BASE + seq) * 1000 + n;
    return {
      id,
      node_id: `I_kwDO${id}`,
      number: n,
      title: `Ledger ${repoName(seq)} #${n}`,
      state: 'open',
      repository_url: `${base}/repos/${GITHUB_ORG}/${repoName(seq)}`,
      created_at: new Date(Date.UTC(2026, 0, 1) + (seq * 100 + n) * 60_000)
        .toISOString()
        .replace('.000Z', 'Z'),
    };
  }

  /** The repositories it holds now (`seq`s), in list order. */
  #live(): number[] {
    const seqs: number[] = [];
    for (let seq = 1; seq <= this.repoCount; seq++) if (!this.#deleted.has(seq)) seqs.push(seq);
    return seqs;
  }

  /** The partner's own list: each repository it holds now, with its issues' numbers. */
  holdings(): Holding[] {
    return this.#live().map((seq) => ({
      id: REPO_ID_BASE + seq,
      name: repoName(seq),
      issues: Array.from({ length: this.#issues(seq) }, (_, i) => i + 1),
    }));
  }

  /** The repositories deleted so far (their ids). */
  deleted(): number[] {
    return [...this.#deleted].sort((a, b) => a - b).map((seq) => REPO_ID_BASE + seq);
  }

  requests(): readonly GithubOrgRequest[] {
    return this.#log.map((r) => ({ ...r }));
  }

  /**
   * Answers one request (`path` below the prefix). Side effects: logs it; may delete a repository
   * (`deleteBeforeIssues`), answer `rateLimited`, or wait out `hold` through `delay`.
   */
  async serve(
    method: string,
    path: string,
    query: URLSearchParams,
    authorization: string | undefined,
    base: string,
    delay: (ms: number) => Promise<boolean>,
  ): Promise<Answer> {
    const page = /^\d{1,6}$/.test(query.get('page') ?? '1') ? Number(query.get('page') ?? '1') : 0;
    const asked = Number(query.get('per_page') ?? DEFAULT_PER_PAGE);
    const perPage = Number.isInteger(asked) && asked >= 1 ? Math.min(asked, MAX_PER_PAGE) : 0;
    const issues = ISSUES_ROUTE.exec(path);
    const entry: GithubOrgRequest = {
      seq: this.#log.length + 1,
      list: issues ? 'issues' : 'repos',
      ...(issues?.[2] === undefined ? {} : { repo: issues[2] }),
      page,
      status: 200,
      records: 0,
    };
    this.#log.push(entry);
    const answer = (status: number, body: unknown, headers?: Record<string, string>): Answer => {
      entry.status = status;
      entry.records = Array.isArray(body) ? body.length : 0;
      return { status, body, ...(headers ? { headers } : {}) };
    };
    const token = bearerOf({ authorization });
    if (token === undefined || !secretEquals(token, this.token)) {
      const message = token === undefined ? 'Requires authentication' : 'Bad credentials';
      return answer(401, { message, documentation_url: DOCS, status: '401' });
    }
    const notFound = () => answer(404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
    if (method !== 'GET') return notFound();
    if (page < 1 || perPage < 1) {
      return answer(422, {
        message: 'Validation Failed: page and per_page are positive integers',
        status: '422',
      });
    }
    let items: unknown[];
    if (path === `/orgs/${GITHUB_ORG}/repos`) {
      items = this.#live().map((seq) => this.repo(seq, base));
    } else {
      const seq = issues?.[1] === GITHUB_ORG ? seqOf(issues[2] ?? '') : undefined;
      if (seq === undefined || seq < 1 || seq > this.repoCount) return notFound();
      if (this.deleteBeforeIssues.delete(seq)) this.#deleted.add(seq);
      if (this.#deleted.has(seq)) return notFound();
      const limited = this.rateLimited;
      if (limited !== undefined && limited.seq === seq && limited.page === page) {
        this.rateLimited = undefined;
        return answer(
          429,
          {
            message:
              'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
            documentation_url: `${DOCS}/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits`,
            status: '429',
          },
          { 'retry-after': String(limited.waitS) },
        );
      }
      const hold = this.hold;
      if (hold !== undefined && hold.seq === seq && hold.page === page) {
        this.hold = undefined;
        hold.arrived();
        if (!(await delay(hold.ms))) return answer(503, { message: 'closing' });
      }
      items = Array.from({ length: this.#issues(seq) }, (_, i) => this.issue(seq, i + 1, base));
    }
    const pages = Math.ceil(items.length / perPage);
    const link = linkHeader(`${base}${path}`, query, page, pages);
    return answer(200, items.slice((page - 1) * perPage, page * perPage), link ? { link } : undefined);
  }
}

/** The `Link` header of page `page` of `pages` (none when there is only one page). */
function linkHeader(at: string, query: URLSearchParams, page: number, pages: number): string | undefined {
  const url = (n: number) => {
    const u = new URL(at);
    for (const [name, value] of query) if (name !== 'page') u.searchParams.set(name, value);
    u.searchParams.set('page', String(n));
    return u.href;
  };
  const links: string[] = [];
  if (page > 1) links.push(`<${url(page - 1)}>; rel="prev"`, `<${url(1)}>; rel="first"`);
  if (page < pages) links.push(`<${url(page + 1)}>; rel="next"`, `<${url(pages)}>; rel="last"`);
  return links.length > 0 ? links.join(', ') : undefined;
}

/** `GET /apis/github-org/…`: the imitation. */
export async function handleGithubOrg(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  org: PartnerGithubOrg,
  delay: (ms: number) => Promise<boolean>,
): Promise<void> {
  const base = `http://${req.headers.host ?? 'partner.invalid'}${GITHUB_ORG_PREFIX}`;
  const path = url.pathname.slice(GITHUB_ORG_PREFIX.length);
  const { status, body, headers } = await org.serve(
    req.method ?? 'GET',
    path,
    url.searchParams,
    req.headers.authorization,
    base,
    delay,
  );
  if (!res.destroyed) sendJson(res, status, body, headers);
}

/**
 * `GET /_admin/github-org` → `{ repos: [{ id, name, issues }], deleted }`: what it holds per
 * repository; `GET /_admin/github-org/requests` → `{ requests }`.
 */
export function handleGithubOrgAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  org: PartnerGithubOrg,
): void {
  if (req.method !== 'GET') throw new HttpError(405, 'method_not_allowed', 'use GET');
  const rest = url.pathname.slice(GITHUB_ORG_ADMIN_PATH.length);
  if (rest === '' || rest === '/')
    return sendJson(res, 200, { repos: org.holdings(), deleted: org.deleted() });
  if (rest === '/requests') return sendJson(res, 200, { requests: org.requests() });
  throw new HttpError(404, 'not_found', `no admin route ${url.pathname}`);
}
