import type { IncomingMessage, ServerResponse } from 'node:http';
import { catalogIds, catalogTotal, dateParam } from './catalog.ts';
import type { EventFilter, EventStore } from './events.ts';
import { InvalidFaultSpecError } from './fault-spec.ts';
import type { FaultInjector } from './faults.ts';
import { HttpError, readJsonBody, sendJson } from './http-io.ts';
import { JOURNAL_ACTIONS, type JournalStore } from './journal.ts';
import type { EffectAction, Ledger, LedgerFilter } from './ledger.ts';
import { SUBMISSION_ACTIONS, type SubmissionStore } from './submissions.ts';

/** Every action of the effect routes, each once (both have `void` and `lookup`). */
const EFFECT_ACTIONS: readonly EffectAction[] = [...new Set([...SUBMISSION_ACTIONS, ...JOURNAL_ACTIONS])];

function methodNotAllowed(allowed: string[]): HttpError {
  return new HttpError(405, 'method_not_allowed', `use ${allowed.join(' or ')}`);
}

/** What the admin API reads and resets. */
export interface AdminContext {
  ledger: Ledger;
  faults: FaultInjector;
  events: EventStore;
  submissions: SubmissionStore;
  journal: JournalStore;
  /** The catalog's record count for a date. */
  catalogRecordCount: (date: string) => number;
}

function ledgerFilter(query: URLSearchParams): LedgerFilter {
  const filter: LedgerFilter = {};
  for (const name of ['path', 'sourceId', 'date', 'fault', 'topic', 'aggregateId', 'reference'] as const) {
    const value = query.get(name);
    if (value) filter[name] = value;
  }
  const action = query.get('action');
  if (action) {
    if (!isEffectAction(action)) {
      throw new HttpError(400, 'invalid_filter', `"action" must be one of ${EFFECT_ACTIONS.join(', ')}`);
    }
    filter.action = action;
  }
  return filter;
}

function isEffectAction(value: string): value is EffectAction {
  return (EFFECT_ACTIONS as readonly string[]).includes(value);
}

function eventFilter(query: URLSearchParams): EventFilter {
  const filter: EventFilter = {};
  const aggregateId = query.get('aggregateId');
  const topic = query.get('topic');
  if (aggregateId) filter.aggregateId = aggregateId;
  if (topic) filter.topic = topic;
  return filter;
}

async function addFault(req: IncomingMessage, res: ServerResponse, faults: FaultInjector): Promise<void> {
  const spec = await readJsonBody(req);
  try {
    // add() validates the untrusted body itself; the cast only satisfies the signature.
    sendJson(res, 201, { id: faults.add(spec as Parameters<FaultInjector['add']>[0]) });
  } catch (error) {
    if (error instanceof InvalidFaultSpecError) throw new HttpError(400, 'invalid_fault', error.message);
    throw error;
  }
}

/**
 * Serves the admin API (never recorded in the ledger, never faulted):
 * - `GET|DELETE /_admin/ledger[?path=&sourceId=&date=&fault=&topic=&aggregateId=&action=&reference=]`
 *   (an unknown `action` is a 400 `invalid_filter`);
 * - `GET|POST|DELETE /_admin/faults`;
 * - `GET /_admin/events[?aggregateId=&topic=]` → `{ events, deliveries, duplicates }` (applied events
 *   in applied order; both counts for the same filter, see `EventStore`), `DELETE /_admin/events`;
 * - `GET /_admin/submissions[?reference=]` → `{ submissions }` (any status, oldest first, with their
 *   summaries), `DELETE /_admin/submissions`;
 * - `GET /_admin/journal-entries[?reference=]` → `{ entries, effects }` (entries any status, oldest
 *   first; effects: every post and every void that changed an entry, `{ seq, at, action, entryId,
 *   reference }`, oldest first), `DELETE /_admin/journal-entries` (clears both);
 * - `GET /_admin/catalog?date=` → `{ ids }`, every catalog record id of the date in list order
 *   (what a client walking any catalog style should end up with; 400 `invalid_date`).
 * DELETEs answer `{ cleared: n }`. Throws `HttpError` (400 bad JSON or spec, 404, 405) for the
 * caller to answer.
 */
export async function handleAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  { ledger, faults, events, submissions, journal, catalogRecordCount }: AdminContext,
): Promise<void> {
  switch (url.pathname) {
    case '/_admin/ledger':
      if (req.method === 'GET')
        return sendJson(res, 200, { entries: ledger.entries(ledgerFilter(url.searchParams)) });
      if (req.method === 'DELETE') {
        const cleared = ledger.count();
        ledger.clear();
        return sendJson(res, 200, { cleared });
      }
      throw methodNotAllowed(['GET', 'DELETE']);
    case '/_admin/faults':
      if (req.method === 'GET') return sendJson(res, 200, { faults: faults.list() });
      if (req.method === 'POST') return addFault(req, res, faults);
      if (req.method === 'DELETE') {
        const cleared = faults.list().length;
        faults.clear();
        return sendJson(res, 200, { cleared });
      }
      throw methodNotAllowed(['GET', 'POST', 'DELETE']);
    case '/_admin/events':
      if (req.method === 'GET') {
        const filter = eventFilter(url.searchParams);
        return sendJson(res, 200, {
          events: events.list(filter),
          deliveries: events.deliveries(filter),
          duplicates: events.duplicates(filter),
        });
      }
      if (req.method === 'DELETE') {
        const cleared = events.list().length;
        events.clear();
        return sendJson(res, 200, { cleared });
      }
      throw methodNotAllowed(['GET', 'DELETE']);
    case '/_admin/submissions':
      if (req.method === 'GET') {
        const reference = url.searchParams.get('reference');
        return sendJson(res, 200, {
          submissions: reference ? submissions.byReference(reference) : submissions.list(),
        });
      }
      if (req.method === 'DELETE') return sendJson(res, 200, { cleared: submissions.clear() });
      throw methodNotAllowed(['GET', 'DELETE']);
    case '/_admin/journal-entries': {
      const reference = url.searchParams.get('reference') || undefined;
      if (req.method === 'GET') {
        return sendJson(res, 200, { entries: journal.list(reference), effects: journal.effects(reference) });
      }
      if (req.method === 'DELETE') return sendJson(res, 200, { cleared: journal.clear() });
      throw methodNotAllowed(['GET', 'DELETE']);
    }
    case '/_admin/catalog': {
      if (req.method !== 'GET') throw methodNotAllowed(['GET']);
      const date = dateParam(url.searchParams.get('date'));
      return sendJson(res, 200, { ids: catalogIds(date, catalogTotal(catalogRecordCount, date)) });
    }
    default:
      throw new HttpError(404, 'not_found', `no admin route ${url.pathname}`);
  }
}
