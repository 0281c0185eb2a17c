import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import {
  type EffectContext,
  errorOutcome,
  type Outcome,
  type Prepared,
  serveEffect,
} from './effect-route.ts';
import { HttpError, readJsonBody, sendJson } from './http-io.ts';
import {
  AMOUNT_PATTERN,
  isBalanced,
  type JournalAction,
  type JournalStore,
  MAX_ACCOUNT_LENGTH,
  MAX_JOURNAL_LINES,
} from './journal.ts';
import type { LedgerInput } from './ledger.ts';
import { MAX_REFERENCE_LENGTH } from './submissions.ts';

/** Path of `POST /journal-entries` and `GET /journal-entries?reference=`; sub-paths carry an id. */
export const JOURNAL_PATH = '/journal-entries';

const VOID_ROUTE = /^\/journal-entries\/([^/]+)\/void$/;

/** What the journal routes need from the server. */
export interface JournalContext extends EffectContext {
  journal: JournalStore;
}

/** Body of `POST /journal-entries`; unknown extra fields are ignored. */
const postSchema = z.object({
  reference: z.string().min(1).max(MAX_REFERENCE_LENGTH),
  lines: z
    .array(
      z.object({
        account: z.string().min(1).max(MAX_ACCOUNT_LENGTH),
        amount: z.string().regex(AMOUNT_PATTERN, 'a decimal string with at most 6 fraction digits'),
      }),
    )
    .min(1)
    .max(MAX_JOURNAL_LINES),
});

/** True for the paths `handleJournal` serves: `/journal-entries` and everything under it. */
export function isJournalPath(pathname: string): boolean {
  return pathname === JOURNAL_PATH || pathname.startsWith(`${JOURNAL_PATH}/`);
}

async function preparePost(req: IncomingMessage, ctx: JournalContext): Promise<Prepared> {
  const body = await readJsonBody(req);
  const result = postSchema.safeParse(body);
  if (!result.success) {
    const given =
      typeof body === 'object' && body !== null ? (body as { reference?: unknown }).reference : undefined;
    const noReference = !postSchema.shape.reference.safeParse(given).success;
    const code = noReference ? 'invalid_reference' : 'invalid_journal_entry';
    throw new HttpError(422, code, z.prettifyError(result.error));
  }
  const { reference, lines } = result.data;
  if (!isBalanced(lines)) throw new HttpError(422, 'unbalanced', 'the amounts of "lines" must sum to 0');
  return {
    target: { route: 'journal', action: 'post', reference },
    facts: { reference },
    apply: () => {
      const entry = ctx.journal.post(reference, lines);
      return { status: 201, body: entry, effect: true, journalEntryId: entry.id, reference };
    },
  };
}

function prepareLookup(url: URL, ctx: JournalContext): Prepared {
  const reference = url.searchParams.get('reference');
  if (!reference) throw new HttpError(400, 'missing_reference', 'query parameter "reference" is required');
  return {
    target: { route: 'journal', action: 'lookup', reference },
    facts: { reference },
    apply: () => ({ status: 200, body: { data: ctx.journal.list(reference) }, effect: false, reference }),
  };
}

function voidOutcome(ctx: JournalContext, id: string): Outcome {
  const result = ctx.journal.voidEntry(id);
  // Possible after a delay: the store was cleared meanwhile.
  if (!result)
    return errorOutcome(new HttpError(404, 'not_found', `no journal entry ${id}`), { journalEntryId: id });
  const { entry, changed } = result;
  return { journalEntryId: id, reference: entry.reference, status: 200, body: entry, effect: changed };
}

function prepareVoid(id: string, ctx: JournalContext): Prepared {
  const entry = ctx.journal.get(id);
  if (!entry) throw new HttpError(404, 'not_found', `no journal entry ${id}`);
  return {
    target: { route: 'journal', action: 'void', reference: entry.reference },
    facts: { reference: entry.reference, journalEntryId: id },
    apply: () => voidOutcome(ctx, id),
  };
}

function decodeId(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(404, 'not_found', 'no journal entry with that id');
  }
}

/**
 * Serves the non-idempotent journal API, applying at most one injected fault of route `journal`
 * (the submissions route's machinery: see `FaultKind` for phases, kinds and late effects):
 * - `POST /journal-entries` `{ reference, lines: [{ account, amount }] }` → 201 `{ id: "je_<n>",
 *   reference, status: "posted", lines }`, a NEW entry on every call (no idempotency key is
 *   honoured); 422 `invalid_reference` (missing or not 1..200 chars), `invalid_journal_entry`
 *   (bad lines), `unbalanced` (amounts not summing to 0); 400 `invalid_json`, 413;
 * - `GET /journal-entries?reference=` → 200 `{ data }` (that reference's entries, oldest first);
 *   400 `missing_reference`;
 * - `POST /journal-entries/:id/void` → 200 the entry, `status: "voided"` (a repeat returns it
 *   unchanged, no second effect); 404 for an unknown id.
 * There is no confirm: posting is final, only a void undoes it. Other methods → 405, other paths
 * under `/journal-entries/` → 404. Side effects: consumes the fault, posts or voids entries (the
 * store's effects ledger), and appends exactly one ledger entry per request (`action`,
 * `reference`, `journalEntryId`, `effect`, `late`) as the submissions routes do.
 */
export async function handleJournal(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  ctx: JournalContext,
): Promise<void> {
  const key = req.headers['idempotency-key'];
  const method = req.method ?? 'GET';
  let base: LedgerInput = {
    method,
    path: url.pathname,
    status: 0,
    ...(typeof key === 'string' ? { idempotencyKey: key } : {}),
    auth: req.headers.authorization !== undefined,
  };
  const fail = (error: HttpError, headers: Record<string, string> = {}): void => {
    ctx.ledger.record({ ...base, status: error.status, effect: false });
    sendJson(res, error.status, { error: error.code, message: error.message }, headers);
  };
  let prepared: Prepared;
  try {
    const match = VOID_ROUTE.exec(url.pathname);
    if (url.pathname === JOURNAL_PATH) {
      const action: JournalAction | undefined =
        method === 'POST' ? 'post' : method === 'GET' ? 'lookup' : undefined;
      if (!action)
        return fail(new HttpError(405, 'method_not_allowed', 'use GET or POST'), { allow: 'GET, POST' });
      base = { ...base, action };
      prepared = action === 'post' ? await preparePost(req, ctx) : prepareLookup(url, ctx);
    } else if (match?.[1]) {
      const id = decodeId(match[1]);
      base = { ...base, action: 'void', journalEntryId: id };
      if (method !== 'POST')
        return fail(new HttpError(405, 'method_not_allowed', 'use POST'), { allow: 'POST' });
      prepared = prepareVoid(id, ctx);
    } else {
      throw new HttpError(404, 'not_found', `no route ${method} ${url.pathname}`);
    }
  } catch (error) {
    if (error instanceof HttpError) return fail(error);
    throw error;
  }
  await serveEffect(req, res, base, prepared, ctx, JOURNAL_PATH);
}
