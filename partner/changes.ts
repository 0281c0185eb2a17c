// An "updated since" partner: an imitation of Zendesk's time-based Incremental Ticket Export
// (`GET /api/v2/incremental/tickets.json?start_time=<epoch seconds>`), built from Zendesk's
// documentation ("Incremental Exports", "Using the Incremental Export API"), each fact a habit:
// - it returns the tickets changed at or after `start_time` (inclusive), oldest change first, in
//   whole seconds, up to 1000 per page (`per_page` lowers it here, for tests: the real sample
//   export serves 50);
// - `next_page` is the same request with `start_time` = `end_time`, the last ticket's second: the
//   tickets that share it are sent again at the top of the next page (the documented duplicates of
//   time-based exports); `end_of_stream` is true on the last page;
// - changes of the last minute are left out ("to ensure the accuracy of the data"), and a
//   `start_time` within it is refused (400);
// - API tokens go in basic auth as `{email}/token:{api_token}`; a wrong one is 401
//   `{ "error": "Couldn't authenticate you" }`;
// - 10 requests a minute: 429 with `Retry-After` in seconds (switched on per test, `rateLimit`).
// Unlike the catalog's pure lists, its tickets change: tests put tickets with the `updated_at` they
// choose, and `tickets()` is the partner's own list of what it holds.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { secretEquals } from './auth.ts';
import { HttpError, readJsonBody, sendJson } from './http-io.ts';

/** Base path of the export, below the partner's URL. */
export const CHANGES_PREFIX = '/changes';
export const CHANGES_EXPORT_PATH = `${CHANGES_PREFIX}/api/v2/incremental/tickets.json`;
/** Admin view of the tickets: GET lists them, POST puts some (`{ tickets: [...] }`). */
export const CHANGES_ADMIN_PATH = '/_admin/changes/tickets';

export const DEFAULT_CHANGES_EMAIL = 'agent@example.com';
export const DEFAULT_CHANGES_TOKEN = 'demo-changes-token';

const MAX_PER_PAGE = 1000;
/** Changes this recent are not served yet. */
const SETTLE_SECONDS = 60;

export interface Ticket {
  id: number;
  subject: string;
  status: string;
  /** When it last changed, in epoch seconds (Zendesk's `generated_timestamp`). */
  generated_timestamp: number;
}

/** A ticket as the export serves it. */
export interface ServedTicket extends Ticket {
  url: string;
  updated_at: string;
}

/** One request the export answered. */
export interface ChangesRequest {
  startTime: number | undefined;
  perPage: number;
  status: number;
  /** Tickets served (with the repeats at the top of a page). */
  count: number;
}

export interface ChangesOptions {
  token?: string;
  /** The partner's clock, in ms (default Date.now). */
  now?: () => number;
}

function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}

export class PartnerChanges {
  readonly token: string;
  private readonly now: () => number;
  private readonly byId = new Map<number, Ticket>();
  private readonly log: ChangesRequest[] = [];
  /** Requests a minute before 429s; undefined: no limit. */
  rateLimit: number | undefined;
  /** A `start_time` from this second on is refused 403 (a permission taken away mid-run); undefined: none. */
  refuseFrom: number | undefined;
  private window: { start: number; count: number } = { start: 0, count: 0 };

  constructor(options: ChangesOptions = {}) {
    this.token = options.token ?? DEFAULT_CHANGES_TOKEN;
    this.now = options.now ?? Date.now;
  }

  /** Puts tickets (a new one, or a change of one it holds). */
  put(tickets: readonly Ticket[]): void {
    for (const t of tickets) this.byId.set(t.id, { ...t });
  }

  /** What it holds now, by id. */
  tickets(): Ticket[] {
    return [...this.byId.values()].sort((a, b) => a.id - b.id);
  }

  /** The requests the export answered, oldest first. */
  requests(): readonly ChangesRequest[] {
    return [...this.log];
  }

  /** Answers one export request. */
  serve(
    url: URL,
    authorization: string | undefined,
    base: string,
  ): { status: number; body: unknown; headers?: Record<string, string> } {
    const startParam = url.searchParams.get('start_time');
    const perPage = Math.min(
      MAX_PER_PAGE,
      Number(url.searchParams.get('per_page') ?? MAX_PER_PAGE) || MAX_PER_PAGE,
    );
    const entry: ChangesRequest = {
      startTime: startParam === null ? undefined : Number(startParam),
      perPage,
      status: 200,
      count: 0,
    };
    this.log.push(entry);
    const answer = (status: number, body: unknown, headers?: Record<string, string>) => {
      entry.status = status;
      return { status, body, ...(headers ? { headers } : {}) };
    };
    const pair = /^Basic (\S+)$/.exec(authorization ?? '')?.[1];
    const text = pair === undefined ? '' : Buffer.from(pair, 'base64').toString('utf8');
    const [user = '', password = ''] = [text.slice(0, text.indexOf(':')), text.slice(text.indexOf(':') + 1)];
    if (!user.endsWith('/token') || !secretEquals(password, this.token)) {
      return answer(401, { error: "Couldn't authenticate you" });
    }
    const nowMs = this.now();
    if (this.rateLimit !== undefined) {
      if (nowMs - this.window.start >= 60_000) this.window = { start: nowMs, count: 0 };
      this.window.count++;
      if (this.window.count > this.rateLimit) {
        const wait = Math.max(1, Math.ceil((this.window.start + 60_000 - nowMs) / 1000));
        return answer(429, { error: 'APIRateLimitExceeded' }, { 'retry-after': String(wait) });
      }
    }
    const nowSeconds = Math.floor(nowMs / 1000);
    if (entry.startTime === undefined || !Number.isInteger(entry.startTime) || entry.startTime < 0) {
      return answer(400, { error: 'InvalidValue', description: 'start_time is required, in epoch seconds' });
    }
    const start = entry.startTime;
    if (start > nowSeconds - SETTLE_SECONDS) {
      return answer(400, {
        error: 'InvalidValue',
        description: 'Too recent start_time. Use a start_time older than one minute',
      });
    }
    if (this.refuseFrom !== undefined && start >= this.refuseFrom) {
      return answer(403, { error: 'Forbidden', description: 'You do not have access to this page' });
    }
    const changed = [...this.byId.values()]
      .filter((t) => t.generated_timestamp >= start && t.generated_timestamp <= nowSeconds - SETTLE_SECONDS)
      .sort((a, b) => a.generated_timestamp - b.generated_timestamp || a.id - b.id);
    const page = changed.slice(0, perPage);
    entry.count = page.length;
    const last = page.at(-1);
    const endTime = last?.generated_timestamp ?? start;
    const next = new URL(`${base}${CHANGES_EXPORT_PATH}`);
    next.searchParams.set('start_time', String(endTime));
    if (url.searchParams.has('per_page')) next.searchParams.set('per_page', String(perPage));
    return answer(200, {
      tickets: page.map((t) => ({
        ...t,
        url: `${base}/api/v2/tickets/${t.id}.json`,
        updated_at: iso(t.generated_timestamp),
      })),
      count: page.length,
      end_time: endTime,
      next_page: next.href,
      end_of_stream: page.length < perPage,
    });
  }
}

/** `GET /changes/api/v2/incremental/tickets.json`: the export. */
export function handleChanges(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  changes: PartnerChanges,
): void {
  if (url.pathname !== CHANGES_EXPORT_PATH || req.method !== 'GET') {
    return sendJson(res, 404, { error: 'InvalidEndpoint', description: 'Not found' });
  }
  const base = `http://${req.headers.host ?? 'partner.invalid'}`;
  const { status, body, headers } = changes.serve(url, req.headers.authorization, base);
  sendJson(res, status, body, headers);
}

/** `GET|POST /_admin/changes/tickets`: the partner's own list, and a way to change it. */
export async function handleChangesAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  changes: PartnerChanges,
): Promise<void> {
  if (req.method === 'GET') return sendJson(res, 200, { tickets: changes.tickets() });
  if (req.method !== 'POST') throw new HttpError(405, 'method_not_allowed', 'GET or POST');
  const body = (await readJsonBody(req)) as { tickets?: unknown };
  const tickets = Array.isArray(body.tickets) ? body.tickets : undefined;
  const valid = tickets?.every(
    (t: Partial<Ticket> | null) =>
      Number.isSafeInteger(t?.id) &&
      typeof t?.subject === 'string' &&
      typeof t.status === 'string' &&
      Number.isSafeInteger(t.generated_timestamp),
  );
  if (!tickets || !valid) {
    throw new HttpError(
      400,
      'invalid_tickets',
      'expected { tickets: [{ id, subject, status, generated_timestamp }] }',
    );
  }
  changes.put(tickets as Ticket[]);
  sendJson(res, 200, { tickets: changes.tickets().length });
}
