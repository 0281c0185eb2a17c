import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { CredentialForm } from './auth.ts';
import type { CatalogStyle } from './catalog.ts';
import type { JournalAction } from './journal.ts';
import type { SubmissionAction } from './submissions.ts';

/** What a request on an effect route (submissions, journal) does. */
export type EffectAction = SubmissionAction | JournalAction;

/** One request the partner served (or deliberately failed). Never holds credentials. */
export interface LedgerEntry {
  /** 1-based, increasing; continues across restarts when a ledger file is used. */
  seq: number;
  /** ISO time the response was decided. */
  at: string;
  method: string;
  /** Path without query string (queries may carry tokens in real APIs). */
  path: string;
  sourceId?: string;
  date?: string;
  /** Cursor as sent by the client; null for a first-page request. Only on records requests. */
  cursor?: string | null;
  /** `starting_after` as sent by the client; null for a first-page request. Only on rates requests. */
  startingAfter?: string | null;
  /** Catalog requests only: the pagination style of the route asked. */
  style?: CatalogStyle;
  /**
   * Catalog requests only: the raw paging value sent (`cursor`, `page_token`, `after`, `page`,
   * `offset`, the search body's `cursor`); null for a first page and on style `none`.
   */
  position?: string | null;
  /** HTTP status sent; 0 when no response was sent (reset, truncate). */
  status: number;
  /** Value of the `Idempotency-Key` header, when present. */
  idempotencyKey?: string;
  /** Whether an `Authorization` header was present. Its value is never recorded. */
  auth: boolean;
  /**
   * Catalog requests only: the form the credential came in (the route's own when it came, else
   * any other sent; absent when none came). Never its value.
   */
  credential?: CredentialForm;
  /** Catalog requests only: whether the credential opened the route (false answers 401). */
  authorized?: boolean;
  /** Name (kind) of the injected fault that shaped this response, if any. */
  fault?: string;
  /** Event deliveries (`POST /events`) only: the event's topic. The payload is never recorded. */
  topic?: string;
  /** Event deliveries only: the event's aggregate id. */
  aggregateId?: string;
  /**
   * Event deliveries only: the W3C `traceparent` header the delivery came with, as a traced
   * consumer would take it for its span's parent (docs/tracing.md).
   */
  traceparent?: string;
  /**
   * Event deliveries only: false when this delivery applied the event, true when the event id was
   * already applied; absent when no event was applied or recognised (a fault or an invalid request).
   */
  duplicate?: boolean;
  /**
   * Effect routes (submissions, journal) only: what the request does (absent when the path or
   * method names none).
   */
  action?: EffectAction;
  /**
   * Effect routes only: the submitted or posted reference, the target submission's or entry's, or
   * the looked-up one.
   */
  reference?: string;
  /** Submissions routes only: the submission concerned, when known (for a submit, once created). */
  submissionId?: string;
  /** Journal routes only: the journal entry concerned, when known (for a post, once created). */
  journalEntryId?: string;
  /**
   * Effect routes only: true when this request created a submission or journal entry or changed
   * its status (also when a fault then failed, lost or delayed the answer), false otherwise.
   */
  effect?: boolean;
  /**
   * Effect routes only: true when the partner processed the request after its client had left
   * (a late effect, see `FaultKind`); `effect` says whether that changed anything. The entry keeps
   * status 499 and fault `client_closed`: the client never got an answer.
   */
  late?: boolean;
  /** `oversize` faults only: the size in bytes of the body the partner meant to send. */
  bodyBytes?: number;
  /**
   * `oversize` faults only: body bytes handed to the connection before the body ended or the client
   * left (at most one 64 KiB chunk more than the socket took): less than `bodyBytes` means the
   * client stopped reading early.
   */
  bytesSent?: number;
}

/** Filter of `entries`/`count`; every given field must match. `cursor: null` (or `position: null`) = first pages. */
export interface LedgerFilter {
  /** Exact path, e.g. `/events`. */
  path?: string;
  sourceId?: string;
  date?: string;
  cursor?: string | null;
  startingAfter?: string | null;
  style?: CatalogStyle;
  position?: string | null;
  credential?: CredentialForm;
  authorized?: boolean;
  status?: number;
  fault?: string;
  topic?: string;
  aggregateId?: string;
  action?: EffectAction;
  reference?: string;
}

/** Ledger entry as the server hands it over, before `seq` and `at` are assigned. */
export type LedgerInput = Omit<LedgerEntry, 'seq' | 'at'>;

function matches(entry: LedgerEntry, filter: LedgerFilter): boolean {
  return (
    (filter.path === undefined || entry.path === filter.path) &&
    (filter.sourceId === undefined || entry.sourceId === filter.sourceId) &&
    (filter.date === undefined || entry.date === filter.date) &&
    (filter.cursor === undefined || entry.cursor === filter.cursor) &&
    (filter.startingAfter === undefined || entry.startingAfter === filter.startingAfter) &&
    (filter.style === undefined || entry.style === filter.style) &&
    (filter.position === undefined || entry.position === filter.position) &&
    (filter.credential === undefined || entry.credential === filter.credential) &&
    (filter.authorized === undefined || entry.authorized === filter.authorized) &&
    (filter.status === undefined || entry.status === filter.status) &&
    (filter.fault === undefined || entry.fault === filter.fault) &&
    (filter.topic === undefined || entry.topic === filter.topic) &&
    (filter.aggregateId === undefined || entry.aggregateId === filter.aggregateId) &&
    (filter.action === undefined || entry.action === filter.action) &&
    (filter.reference === undefined || entry.reference === filter.reference)
  );
}

function lastSeqIn(file: string): number {
  if (!existsSync(file)) return 0;
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  try {
    const last = JSON.parse(lines[lines.length - 1] ?? '') as Partial<LedgerEntry>;
    return typeof last.seq === 'number' ? last.seq : lines.length;
  } catch {
    return lines.length;
  }
}

/**
 * Counts the partner's effects: an in-memory list of every request served, optionally mirrored
 * to an append-only JSON-lines file so operators can count effects across restarts.
 */
export class Ledger {
  readonly #entries: LedgerEntry[] = [];
  readonly #file: string | undefined;
  #seq: number;

  /**
   * Reads the last `seq` of `file` (if it exists) so numbering continues after a restart; creates
   * the file's directory when missing.
   */
  constructor(file?: string) {
    this.#file = file;
    if (file) mkdirSync(path.dirname(file), { recursive: true });
    this.#seq = file ? lastSeqIn(file) : 0;
  }

  /**
   * Appends an entry and returns it. Side effect: with a ledger file, appends one JSON line
   * synchronously (so an entry exists before its response is sent); throws on I/O errors.
   */
  record(input: LedgerInput): LedgerEntry {
    const entry: LedgerEntry = { seq: ++this.#seq, at: new Date().toISOString(), ...input };
    this.#entries.push(entry);
    if (this.#file) appendFileSync(this.#file, `${JSON.stringify(entry)}\n`);
    return entry;
  }

  /** Entries matching `filter`, oldest first (copies; mutating them does not alter the ledger). */
  entries(filter: LedgerFilter = {}): LedgerEntry[] {
    return this.#entries.filter((e) => matches(e, filter)).map((e) => ({ ...e }));
  }

  /** Number of entries matching `filter`. */
  count(filter: LedgerFilter = {}): number {
    return this.#entries.reduce((n, e) => (matches(e, filter) ? n + 1 : n), 0);
  }

  /** Empties the in-memory view. The ledger file, an audit trail, is left untouched. */
  clear(): void {
    this.#entries.length = 0;
  }
}
