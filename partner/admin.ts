import type { IncomingMessage, ServerResponse } from 'node:http';
import { type FaultInjector, InvalidFaultSpecError } from './faults.ts';
import { HttpError, readJsonBody, sendJson } from './http-io.ts';
import type { Ledger, LedgerFilter } from './ledger.ts';

function methodNotAllowed(allowed: string[]): HttpError {
  return new HttpError(405, 'method_not_allowed', `use ${allowed.join(' or ')}`);
}

function ledgerFilter(query: URLSearchParams): LedgerFilter {
  const filter: LedgerFilter = {};
  const sourceId = query.get('sourceId');
  const date = query.get('date');
  const fault = query.get('fault');
  if (sourceId) filter.sourceId = sourceId;
  if (date) filter.date = date;
  if (fault) filter.fault = fault;
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
 * `GET|DELETE /_admin/ledger[?sourceId=&date=&fault=]` and `GET|POST|DELETE /_admin/faults`.
 * Throws `HttpError` (400 bad JSON or spec, 404, 405) for the caller to answer.
 */
export async function handleAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  ledger: Ledger,
  faults: FaultInjector,
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
    default:
      throw new HttpError(404, 'not_found', `no admin route ${url.pathname}`);
  }
}
