// The imitated APIs' own request log: every request each API answered, so a test can compare the
// requests a run made with the pages it needed.
import type { ApiName } from './kit.ts';

/** One request an imitated API answered. Never holds a credential or a query string. */
export interface ApiRequest {
  /** 1-based, increasing. */
  seq: number;
  /** ISO time of the answer. */
  at: string;
  api: ApiName;
  method: string;
  /** The path below `/apis/<name>`. */
  path: string;
  /** The scope the request named (a date, or `account`), when it got that far. */
  scope?: string;
  /** The paging value sent (cursor, token, page, offset); null on a first page. */
  position: string | null;
  status: number;
  /** The habit that shaped the answer, if one did. */
  habit?: string;
  /** Records the answer carried, when it was a page (absent on a refusal or a redirect). */
  records?: number;
  /** Whether the credential opened the API. */
  authorized: boolean;
}

/** Filter of `entries`/`count`: every given field must match. */
export interface ApiRequestFilter {
  api?: ApiName;
  scope?: string;
  status?: number;
  authorized?: boolean;
  habit?: string;
}

function matches(entry: ApiRequest, filter: ApiRequestFilter): boolean {
  return (
    (filter.api === undefined || entry.api === filter.api) &&
    (filter.scope === undefined || entry.scope === filter.scope) &&
    (filter.status === undefined || entry.status === filter.status) &&
    (filter.authorized === undefined || entry.authorized === filter.authorized) &&
    (filter.habit === undefined || entry.habit === filter.habit)
  );
}

/** The request log of the imitated APIs, in memory. */
export class ApiRequestLog {
  readonly #entries: ApiRequest[] = [];
  #seq = 0;

  /** Appends an entry and returns it. */
  record(input: Omit<ApiRequest, 'seq' | 'at'>): ApiRequest {
    const entry: ApiRequest = { seq: ++this.#seq, at: new Date().toISOString(), ...input };
    this.#entries.push(entry);
    return entry;
  }

  /** Entries matching `filter`, oldest first (copies). */
  entries(filter: ApiRequestFilter = {}): ApiRequest[] {
    return this.#entries.filter((e) => matches(e, filter)).map((e) => ({ ...e }));
  }

  /** Number of entries matching `filter`. */
  count(filter: ApiRequestFilter = {}): number {
    return this.#entries.reduce((n, e) => (matches(e, filter) ? n + 1 : n), 0);
  }

  /** Empties the log; returns how many entries it held. */
  clear(): number {
    const cleared = this.#entries.length;
    this.#entries.length = 0;
    return cleared;
  }
}
