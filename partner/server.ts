import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { handleAdmin } from './admin.ts';
import {
  type ApiName,
  APIS_ADMIN_PREFIX,
  createApis,
  handleApi,
  handleApisAdmin,
  isApiPath,
  type PartnerApis,
} from './apis/index.ts';
import { CATALOG_SOURCE } from './catalog.ts';
import { CATALOG_PREFIX, type CatalogContext, handleCatalog } from './catalog-route.ts';
import { handleEvents, type EventsContext } from './events-route.ts';
import { EventStore } from './events.ts';
import { MAX_DELAY_MS } from './fault-kinds.ts';
import { FaultInjector } from './faults.ts';
import {
  GITHUB_ORG_ADMIN_PATH,
  GITHUB_ORG_PREFIX,
  type GithubOrgOptions,
  handleGithubOrg,
  handleGithubOrgAdmin,
  PartnerGithubOrg,
} from './apis/github-org.ts';
import { HttpError, sendError, sendJson } from './http-io.ts';
import { handleJournal, isJournalPath, type JournalContext } from './journal-route.ts';
import { JournalStore } from './journal.ts';
import { Ledger } from './ledger.ts';
import { OAUTH_ADMIN_PREFIX, handleOAuthAdmin } from './oauth/admin.ts';
import { handleOAuthApi, OAUTH_API_PREFIX } from './oauth/api-route.ts';
import { createOAuth, type OAuthOptions, type PartnerOAuth } from './oauth/index.ts';
import {
  CHANGES_ADMIN_PATH,
  CHANGES_PREFIX,
  type ChangesOptions,
  handleChanges,
  handleChangesAdmin,
  PartnerChanges,
} from './changes.ts';
import { handleToken, OAUTH_TOKEN_PATH } from './oauth/token-route.ts';
import { handleRates, RATES_PATH, type RatesContext } from './rates-route.ts';
import { DEFAULT_RATE_PAIRS } from './rates.ts';
import { handleRecords, type RecordsContext } from './records-route.ts';
import { defaultRecordCount } from './records.ts';
import { handleSubmissions, isSubmissionsPath, type SubmissionsContext } from './submissions-route.ts';
import { SubmissionStore } from './submissions.ts';

export interface PartnerOptions {
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** TCP port. Default 4010; 0 picks a random free port (see `PartnerServer.port`). */
  port?: number;
  /** Number of records for (sourceId, date); default: deterministic from a hash, 150..400. */
  recordCount?: (sourceId: string, date: string) => number;
  /** Max records per response page; default 50. Clients may ask for less with ?limit= (1..500). */
  maxPageSize?: number;
  /**
   * Number of currency pairs `GET /rates` lists for a date (clamped to 0..240); default 56 (the
   * 8 × 7 pairs of EUR, USD, GBP, JPY, CHF, CAD, AUD, SEK). A count n·(n−1) lists exactly the pairs
   * of the first n currencies.
   */
  ratePairCount?: (date: string) => number;
  /**
   * The bearer token `GET /rates` requires (`Authorization: Bearer <token>`); default: any
   * non-empty bearer token. The other routes only record whether an `Authorization` header came.
   */
  ratesToken?: string;
  /**
   * The token the catalog routes (`/catalog/:auth/…`) require, sent as each `:auth` kind says
   * (bearer, api key, or the password of basic user `demo`); default `demo-catalog-token`.
   */
  catalogToken?: string;
  /** Number of catalog records for a date; default: deterministic from a hash, 150..400. */
  catalogRecordCount?: (date: string) => number;
  /** Append every ledger entry as a JSON line to this file (operators can count effects after a restart). */
  ledgerFile?: string;
  /**
   * Late-effect window of `before` delay faults on the submissions routes, in ms (default 0 = off;
   * at most `MAX_DELAY_MS`): a request whose client leaves at most this long before the delay ends
   * is still applied when it ends, as real partners do. A fault's own `lateEffectMs` overrides it.
   */
  lateEffectMs?: number;
  /**
   * Records each imitated API (`/apis/<name>/…`, see partner/apis/) holds for a scope: a business
   * date `YYYY-MM-DD`, or `account` for the lists with no date filter. Default: deterministic
   * from a hash, 150..400.
   */
  apiRecordCount?: (api: ApiName, scope: string) => number;
  /** Secrets of the imitated APIs other than their defaults (`DEFAULT_API_TOKENS`). */
  apiTokens?: Partial<Record<ApiName, string>>;
  /**
   * The demo OAuth2 authorization server (`POST /oauth/token`, the protected `/oauth-api/items`):
   * its clients, access-token lifetime, token endpoint delay and default reuse interval (see
   * `OAuthOptions`; default: client `demo-oauth-client`, 60 s tokens, no delay, no reuse interval).
   */
  oauth?: OAuthOptions;
  /** The "updated since" export (`/changes/api/v2/incremental/tickets.json`, partner/changes.ts). */
  changes?: ChangesOptions;
  /** The parent → child imitation (`/apis/github-org/…`, partner/apis/github-org.ts). */
  githubOrg?: GithubOrgOptions;
}

export interface PartnerServer {
  /** Base URL without trailing slash, e.g. http://127.0.0.1:4010. */
  url: string;
  /** The port actually bound (useful with `port: 0`). */
  port: number;
  /** In-memory view of every request served. */
  ledger: Ledger;
  /** Programmatic fault injection (same instance as the admin API). */
  faults: FaultInjector;
  /** Events applied by `POST /events`, deduplicated by event id (same instance as the admin API). */
  events: EventStore;
  /**
   * Submissions created by `POST /submissions` (never deduplicated), confirmed or voided by id (same
   * instance as the admin API).
   */
  submissions: SubmissionStore;
  /**
   * Journal entries posted by `POST /journal-entries` (never deduplicated), voided by id, with the
   * effects ledger of every post and void (same instance as the admin API).
   */
  journal: JournalStore;
  /**
   * The imitated list APIs (`/apis/<name>/…`): their own lists of what they hold, the requests
   * they answered and their switchable habits (same instance as `/_admin/apis…`).
   */
  apis: PartnerApis;
  /**
   * The demo OAuth2 authorization server: its clients and token families, its request ledger,
   * faults and settings (same instance as `/_admin/oauth…`).
   */
  oauth: PartnerOAuth;
  /** The "updated since" export's tickets, request log and switches (same instance as its admin route). */
  changes: PartnerChanges;
  /** The parent → child imitation: what it holds per repository, its request log and switches. */
  githubOrg: PartnerGithubOrg;
  /** Stops accepting, ends keep-alive sockets and pending delayed responses; resolves when closed. */
  close(): Promise<void>;
}

/** Everything the routes share. */
type PartnerContext = RecordsContext &
  EventsContext &
  SubmissionsContext &
  RatesContext &
  JournalContext &
  CatalogContext & {
    apis: PartnerApis;
    oauth: PartnerOAuth;
    changes: PartnerChanges;
    githubOrg: PartnerGithubOrg;
  };

/** The catalog's token when the options name none. */
const DEFAULT_CATALOG_TOKEN = 'demo-catalog-token';

const RECORDS_ROUTE = /^\/sources\/([^/]+)\/records$/;
const SOURCE_ID = /^[A-Za-z0-9._~:-]{1,128}$/;

function decodeSourceId(segment: string): string {
  let sourceId: string;
  try {
    sourceId = decodeURIComponent(segment);
  } catch {
    sourceId = '';
  }
  if (!SOURCE_ID.test(sourceId)) {
    throw new HttpError(400, 'invalid_source', 'source id must be 1..128 of [A-Za-z0-9._~:-]');
  }
  return sourceId;
}

async function route(req: IncomingMessage, res: ServerResponse, ctx: PartnerContext): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://partner.invalid');
  if (url.pathname === '/healthz') return sendJson(res, 200, { ok: true });
  if (url.pathname === APIS_ADMIN_PREFIX || url.pathname.startsWith(`${APIS_ADMIN_PREFIX}/`)) {
    return handleApisAdmin(req, res, url, ctx.apis);
  }
  if (url.pathname === OAUTH_ADMIN_PREFIX || url.pathname.startsWith(`${OAUTH_ADMIN_PREFIX}/`)) {
    return handleOAuthAdmin(req, res, url, ctx.oauth);
  }
  if (url.pathname === CHANGES_ADMIN_PATH) return handleChangesAdmin(req, res, ctx.changes);
  if (url.pathname === GITHUB_ORG_ADMIN_PATH || url.pathname.startsWith(`${GITHUB_ORG_ADMIN_PATH}/`)) {
    return handleGithubOrgAdmin(req, res, url, ctx.githubOrg);
  }
  if (url.pathname.startsWith('/_admin/')) return handleAdmin(req, res, url, ctx);
  if (url.pathname.startsWith(`${CHANGES_PREFIX}/`)) return handleChanges(req, res, url, ctx.changes);
  // The authorization server answers in OAuth's words and keeps its own request ledger too.
  if (url.pathname === OAUTH_TOKEN_PATH) return handleToken(req, res, url, ctx);
  if (url.pathname.startsWith(OAUTH_API_PREFIX)) return handleOAuthApi(req, res, url, ctx.oauth, ctx.ledger);
  // The imitated APIs answer in their own words and keep their own request log.
  if (url.pathname.startsWith(`${GITHUB_ORG_PREFIX}/`)) {
    return handleGithubOrg(req, res, url, ctx.githubOrg, ctx.delay);
  }
  if (isApiPath(url.pathname)) return handleApi(req, res, url, ctx.apis, ctx.ledger);
  const key = req.headers['idempotency-key'];
  const base = {
    method: req.method ?? 'GET',
    path: url.pathname,
    ...(typeof key === 'string' ? { idempotencyKey: key } : {}),
    auth: req.headers.authorization !== undefined,
  };
  try {
    if (url.pathname === '/events') return await handleEvents(req, res, url, ctx);
    if (isSubmissionsPath(url.pathname)) return await handleSubmissions(req, res, url, ctx);
    if (url.pathname === RATES_PATH) return await handleRates(req, res, url, ctx);
    if (isJournalPath(url.pathname)) return await handleJournal(req, res, url, ctx);
    if (url.pathname.startsWith(CATALOG_PREFIX)) return await handleCatalog(req, res, url, ctx);
    const match = RECORDS_ROUTE.exec(url.pathname);
    if (!match?.[1]) throw new HttpError(404, 'not_found', `no route ${req.method} ${url.pathname}`);
    await handleRecords(req, res, url, decodeSourceId(match[1]), ctx);
  } catch (error) {
    // Requests the partner turns away are still effects worth counting.
    if (error instanceof HttpError) ctx.ledger.record({ ...base, status: error.status });
    throw error;
  }
}

function validateOptions(options: PartnerOptions): void {
  const { port, maxPageSize, lateEffectMs } = options;
  for (const name of ['ratesToken', 'catalogToken'] as const) {
    const token = options[name];
    if (token !== undefined && !/^\S+$/.test(token)) {
      throw new RangeError(`${name} must be a non-empty string without whitespace`);
    }
  }
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    throw new RangeError(`port must be an integer in 0..65535, got ${port}`);
  }
  if (maxPageSize !== undefined && !(Number.isInteger(maxPageSize) && maxPageSize >= 1)) {
    throw new RangeError(`maxPageSize must be a positive integer, got ${maxPageSize}`);
  }
  if (
    lateEffectMs !== undefined &&
    !(Number.isInteger(lateEffectMs) && lateEffectMs >= 0 && lateEffectMs <= MAX_DELAY_MS)
  ) {
    throw new RangeError(`lateEffectMs must be an integer in 0..${MAX_DELAY_MS}, got ${lateEffectMs}`);
  }
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

/**
 * Starts the demo partner API: deterministic records, a webhook endpoint applying each event once
 * (`POST /events`), a non-idempotent submissions API (`/submissions`, see `handleSubmissions`),
 * deterministic exchange rates as a Stripe-style list (`GET /rates`, see `handleRates`), a
 * non-idempotent journal API (`/journal-entries`, see `handleJournal`), a catalog served in
 * every common pagination style and auth kind (`/catalog/:auth/…`, see `handleCatalog`), imitations
 * of twelve widely used list APIs (`/apis/<name>/…`, see partner/apis/) and a parent → child one
 * (`/apis/github-org/…`, partner/apis/github-org.ts), an OAuth2 authorization
 * server with a protected API (`/oauth/token`, `/oauth-api/items`, see partner/oauth/), a ledger
 * counting every request served and fault injection. Resolves once listening; rejects on
 * invalid options or a bind error (e.g. EADDRINUSE). Side effects: binds a port; with `ledgerFile`, appends to that file.
 */
export async function startPartner(options: PartnerOptions = {}): Promise<PartnerServer> {
  validateOptions(options);
  const host = options.host ?? '127.0.0.1';
  // Pending delays, so close() can cancel them: each settles to false instead of firing.
  const delays = new Map<NodeJS.Timeout, (fired: boolean) => void>();
  let closing = false;
  const ctx: PartnerContext = {
    isClosing: () => closing,
    ledger: new Ledger(options.ledgerFile),
    faults: new FaultInjector(),
    events: new EventStore(),
    submissions: new SubmissionStore(),
    journal: new JournalStore(),
    apis: createApis({
      ...(options.apiRecordCount ? { recordCount: options.apiRecordCount } : {}),
      ...(options.apiTokens ? { tokens: options.apiTokens } : {}),
    }),
    oauth: createOAuth(options.oauth),
    changes: new PartnerChanges(options.changes),
    githubOrg: new PartnerGithubOrg(options.githubOrg),
    ratePairCount: options.ratePairCount ?? (() => DEFAULT_RATE_PAIRS),
    ratesToken: options.ratesToken,
    catalogToken: options.catalogToken ?? DEFAULT_CATALOG_TOKEN,
    catalogRecordCount: options.catalogRecordCount ?? ((date) => defaultRecordCount(CATALOG_SOURCE, date)),
    recordCount: options.recordCount ?? defaultRecordCount,
    maxPageSize: options.maxPageSize ?? 50,
    lateEffectMs: options.lateEffectMs ?? 0,
    delay: (ms) =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          delays.delete(timer);
          resolve(true);
        }, ms);
        delays.set(timer, resolve);
      }),
  };
  // HTTP keep-alive is Node's default (keepAliveTimeout 5 s); close() ends idle sockets itself.
  const server = createServer((req, res) => {
    route(req, res, ctx).catch((error: unknown) => {
      if (res.headersSent || res.destroyed) return void res.socket?.destroy();
      if (error instanceof HttpError) return sendError(res, error);
      sendJson(res, 500, {
        error: 'internal',
        message: error instanceof Error ? error.message : String(error),
      });
    });
  });
  const port = await listen(server, options.port ?? 4010, host);
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    ledger: ctx.ledger,
    faults: ctx.faults,
    events: ctx.events,
    submissions: ctx.submissions,
    journal: ctx.journal,
    apis: ctx.apis,
    oauth: ctx.oauth,
    changes: ctx.changes,
    githubOrg: ctx.githubOrg,
    close: () => {
      // Order matters: cancel delayed responses first so none fires into a closing server, then
      // stop accepting, then drop every socket (idle keep-alive ones would otherwise hold close()).
      closing = true;
      for (const [timer, settle] of delays) {
        clearTimeout(timer);
        settle(false);
      }
      delays.clear();
      if (server.listening) server.close();
      server.closeAllConnections();
      return closed;
    },
  };
}
