// What every imitated list API shares: the names, what a route is given and answers, the
// deterministic collections, the opaque page tokens, and the helpers its answers are made of.
import type { IncomingHttpHeaders } from 'node:http';
import { hash32, isValidDate } from '../records.ts';
import type { ActiveHabit } from './habits.ts';
import type { ApiName } from './names.ts';

export { API_NAMES, type ApiName } from './names.ts';

/** Prefix of every imitated API's routes: `/apis/<name>` is the API's base URL. */
export const APIS_PREFIX = '/apis/';

/**
 * The scope of the lists that have no date filter (HubSpot's contacts, Zendesk's tickets): the
 * account's whole collection, whatever the business date of the run.
 */
export const ACCOUNT_SCOPE = 'account';

/** One request to an imitated API, as its route sees it (past the prefix). */
export interface ApiCall {
  method: string;
  /** The path below `/apis/<name>`, e.g. `/v1/customers`. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body of a POST; undefined when there is none or it is not JSON (see `bodyError`). */
  body: unknown;
  /** Why the body is not JSON, when it is not. */
  bodyError?: string;
  /** `http://host:port/apis/<name>` as the client addressed it: what absolute links start with. */
  base: string;
  /** The API's secret (its token, key or password). */
  token: string;
  /** Records the API holds for a scope (a date, or `ACCOUNT_SCOPE`). */
  count(scope: string): number;
  /**
   * The switched-on habit `name` for this request, consumed (see `HabitBook.take`): a route asks
   * for each of its habits where it would show, so a habit counts only requests that reach it.
   */
  habit(name: string, scope: string | undefined): ActiveHabit | undefined;
}

/** What a route answers, and what the request log keeps of it. */
export interface ApiAnswer {
  status: number;
  /** A JSON body. */
  body: unknown;
  headers?: Record<string, string>;
  /** The scope the request named, when it got that far. */
  scope?: string;
  /** The paging value the request sent (cursor, token, page, offset); null on a first page. */
  position?: string | null;
  /** The habit that shaped the answer. */
  habit?: string;
  /** Records a page carried; absent on an answer that is no page (a refusal, a redirect). */
  records?: number;
  /** Whether the credential opened the API. */
  authorized: boolean;
}

/** One imitated API: its data, its habits and its route. */
export interface ApiDefinition<T = unknown> {
  name: ApiName;
  /** What it imitates, e.g. `Stripe list (GET /v1/customers)`. */
  title: string;
  /** Its switchable hostile habits: name → what it does. */
  habits: Readonly<Record<string, string>>;
  /** True when its list has no date filter: it holds one collection, scope `ACCOUNT_SCOPE`. */
  undated?: boolean;
  /** Record `seq` (1-based) of a scope, in the API's own shape. Pure. */
  item(scope: string, seq: number): T;
  /** The id a source reads from a record (what `records.id` points at). Pure. */
  idOf(item: T): string;
  /** Newest first (Slack, X, Stripe) rather than oldest first. */
  newestFirst?: boolean;
  /** Answers one request. May throw only for a bug: every refusal is an answer in the API's own words. */
  serve(call: ApiCall): ApiAnswer | Promise<ApiAnswer>;
}

/** Every record of a scope, in the API's list order. Pure. */
export function collection<T>(def: ApiDefinition<T>, scope: string, count: number): T[] {
  const items: T[] = [];
  for (let seq = 1; seq <= Math.max(0, Math.floor(count)); seq++) items.push(def.item(scope, seq));
  return def.newestFirst ? items.reverse() : items;
}

/** The date the records of a scope are dated on (undated collections: a fixed day). */
function dayOf(scope: string): string {
  return isValidDate(scope) ? scope : '2026-01-05';
}

/**
 * The moment (ms) record `seq` of an API's scope was created: a deterministic second of its day,
 * later for a later `seq` (about one a minute), so newest-first lists are ordered by time too.
 */
export function createdAt(api: ApiName, scope: string, seq: number): number {
  const jitter = hash32(`time|${api}|${scope}|${seq}`) % 59;
  const second = ((seq - 1) * 59 + jitter) % 86_400;
  return Date.parse(`${dayOf(scope)}T00:00:00.000Z`) + second * 1000;
}

/** `n` lowercase hex digits derived from `text`. Pure. */
function hexOf(text: string, n: number): string {
  let out = '';
  for (let i = 0; out.length < n; i++) out += hash32(`${i}|${text}`).toString(16).padStart(8, '0');
  return out.slice(0, n);
}

/** A UUID-shaped id derived from `text` (Graph, Notion). Pure. */
export function uuidOf(text: string): string {
  const h = hexOf(text, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** `n` characters of `alphabet` derived from `text`. Pure. */
export function charsOf(text: string, n: number, alphabet: string): string {
  let out = '';
  for (let i = 0; out.length < n; i++) out += alphabet[hash32(`${i}|${text}`) % alphabet.length];
  return out;
}

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * An opaque page token naming the position (0-based) of a page's first record in an API's list of
 * a scope: base64url, so a client can only hand it back. Pure.
 */
export function encodeToken(api: ApiName, scope: string, position: number): string {
  return Buffer.from(`${api}|${scope}|${position}`, 'utf8').toString('base64url');
}

/**
 * The position a token names, or undefined when this API never issued it for this scope (any
 * other text, another scope, or a position outside `1..max`).
 */
export function decodeToken(api: ApiName, scope: string, token: string, max: number): number | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(token)) return undefined;
  const match = /^([a-z-]+)\|([^|]+)\|(\d{1,7})$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (!match || match[1] !== api || match[2] !== scope) return undefined;
  const position = Number(match[3]);
  if (encodeToken(api, scope, position) !== token) return undefined;
  return position >= 1 && position <= max ? position : undefined;
}

/** The token of an `Authorization: Bearer <token>` header (or `token <token>`, GitHub's old form). */
export function bearerOf(headers: IncomingHttpHeaders): string | undefined {
  return /^(?:Bearer|token) (\S+)$/i.exec(headers.authorization ?? '')?.[1];
}

/** The `user:password` of an `Authorization: Basic …` header. */
export function basicOf(headers: IncomingHttpHeaders): string | undefined {
  const encoded = /^Basic ([A-Za-z0-9+/]+={0,2})$/.exec(headers.authorization ?? '')?.[1];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
}

/** A single-valued header, lowercased name. */
export function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** An integer query parameter: undefined when absent, NaN when not a whole number. */
export function intParam(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  return /^-?\d{1,12}$/.test(raw) ? Number(raw) : Number.NaN;
}

/** The epoch second `seconds` from now, rounded up (a client waiting until it waited long enough). */
export function epochIn(seconds: number): number {
  return Math.ceil(Date.now() / 1000 + seconds);
}

/** The wait a rate-limit habit asks for, in whole seconds (default 1). */
export function waitOf(habit: ActiveHabit): number {
  return habit.waitS ?? 1;
}

/**
 * The business date a `[start, end)` window names when it is exactly one UTC day (what a source
 * sends with `{dayStart}`/`{dayEnd}`), else undefined.
 */
export function dayOfWindow(start: number, end: number): string | undefined {
  if (!Number.isFinite(start) || end - start !== 86_400_000 || start % 86_400_000 !== 0) return undefined;
  return new Date(start).toISOString().slice(0, 10);
}

/** The page at 0-based `from` of `items`, `size` long, and where the next one starts (undefined: none). */
export function pageOf<T>(items: readonly T[], from: number, size: number): { page: T[]; next?: number } {
  const page = items.slice(from, from + size);
  const end = from + page.length;
  return end < items.length ? { page, next: end } : { page };
}

/** An answer of `status` with `body`; authorized unless `extras` says otherwise. */
export function answer(
  status: number,
  body: unknown,
  extras: Partial<Omit<ApiAnswer, 'status' | 'body'>> = {},
): ApiAnswer {
  return { status, body, authorized: true, ...extras };
}

/**
 * A query string as APIs that use `$` or brackets in their parameter names write it: each name
 * kept as it is (`$top`, `page[size]`), each value percent-encoded.
 */
export function queryString(params: Iterable<[string, string]>): string {
  return [...params].map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
}
