import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { ActiveFault, SubmissionsFaultTarget } from './faults.ts';
import { HttpError, readJsonBody, sendJson } from './http-io.ts';
import type { LedgerInput } from './ledger.ts';
import { delayFault, type RecordsContext } from './records-route.ts';
import {
  MAX_REFERENCE_LENGTH,
  type Submission,
  type SubmissionAction,
  type SubmissionStore,
} from './submissions.ts';

/** Path of `POST /submissions` and `GET /submissions?reference=`; sub-paths carry an id. */
export const SUBMISSIONS_PATH = '/submissions';

const ACTION_ROUTE = /^\/submissions\/([^/]+)\/(confirm|void)$/;

/** What the submissions routes need from the server. */
export interface SubmissionsContext extends Pick<
  RecordsContext,
  'ledger' | 'faults' | 'delay' | 'isClosing'
> {
  submissions: SubmissionStore;
  /** The server's late-effect window for `before` delays (0 = off); a fault's own overrides it. */
  lateEffectMs: number;
}

/** Body of `POST /submissions`; unknown extra fields are ignored. */
const submitSchema = z.object({
  reference: z.string().min(1).max(MAX_REFERENCE_LENGTH),
  summary: z.json().optional(),
});

/** Answer of submit/confirm/void: the submission without its summary (the payload is not echoed). */
export type SubmissionReceipt = Omit<Submission, 'summary'>;

/** True for the paths `handleSubmissions` serves: `/submissions` and everything under it. */
export function isSubmissionsPath(pathname: string): boolean {
  return pathname === SUBMISSIONS_PATH || pathname.startsWith(`${SUBMISSIONS_PATH}/`);
}

function receipt({ summary: _summary, ...rest }: Submission): SubmissionReceipt {
  return rest;
}

/** The normal answer of a request and whether computing it was an effect. */
interface Outcome {
  status: number;
  body: unknown;
  /** True when this request created a submission or changed one's status. */
  effect: boolean;
  submissionId?: string;
  reference?: string;
}

function errorOutcome(error: HttpError, facts: Partial<Outcome> = {}): Outcome {
  return {
    ...facts,
    status: error.status,
    body: { error: error.code, message: error.message },
    effect: false,
  };
}

/** A well-formed request on a known target: what a fault matches on and what applying it does. */
interface Prepared {
  target: SubmissionsFaultTarget;
  /** Facts known before the effect (recorded even when a fault stops it). */
  facts: Pick<LedgerInput, 'reference' | 'submissionId'>;
  /** Performs the effect (if any) against the store as it is now, and computes the answer. */
  apply: () => Outcome;
}

function confirmOrVoid(store: SubmissionStore, action: 'confirm' | 'void', id: string): Outcome {
  const result = action === 'confirm' ? store.confirm(id) : store.voidSubmission(id);
  // Possible after a delay: the store was cleared meanwhile.
  if (!result)
    return errorOutcome(new HttpError(404, 'not_found', `no submission ${id}`), { submissionId: id });
  const { submission, changed } = result;
  const facts = { submissionId: id, reference: submission.reference };
  if (action === 'confirm' && submission.status === 'voided') {
    return errorOutcome(new HttpError(409, 'voided', `submission ${id} is voided`), facts);
  }
  return { ...facts, status: 200, body: receipt(submission), effect: changed };
}

async function prepareSubmit(req: IncomingMessage, ctx: SubmissionsContext): Promise<Prepared> {
  const result = submitSchema.safeParse(await readJsonBody(req));
  if (!result.success) throw new HttpError(400, 'invalid_submission', z.prettifyError(result.error));
  const { reference, summary } = result.data;
  return {
    target: { route: 'submissions', action: 'submit', reference },
    facts: { reference },
    apply: () => {
      const created = ctx.submissions.create(reference, summary);
      return { status: 201, body: receipt(created), effect: true, submissionId: created.id, reference };
    },
  };
}

function prepareLookup(url: URL, ctx: SubmissionsContext): Prepared {
  const reference = url.searchParams.get('reference');
  if (!reference) throw new HttpError(400, 'missing_reference', 'query parameter "reference" is required');
  return {
    target: { route: 'submissions', action: 'lookup', reference },
    facts: { reference },
    apply: () => ({
      status: 200,
      body: { submissions: ctx.submissions.byReference(reference) },
      effect: false,
      reference,
    }),
  };
}

function prepareChange(action: 'confirm' | 'void', id: string, ctx: SubmissionsContext): Prepared {
  const submission = ctx.submissions.get(id);
  if (!submission) throw new HttpError(404, 'not_found', `no submission ${id}`);
  return {
    target: { route: 'submissions', action, reference: submission.reference },
    facts: { reference: submission.reference, submissionId: id },
    apply: () => confirmOrVoid(ctx.submissions, action, id),
  };
}

function decodeId(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(404, 'not_found', 'no submission with that id');
  }
}

/** `entry` with what computing the outcome found out (reference, submission id, effect, status). */
function withOutcome(entry: LedgerInput, outcome: Outcome): LedgerInput {
  return {
    ...entry,
    ...(outcome.reference === undefined ? {} : { reference: outcome.reference }),
    ...(outcome.submissionId === undefined ? {} : { submissionId: outcome.submissionId }),
    status: outcome.status,
    effect: outcome.effect,
  };
}

/** Records the outcome (with the fault's kind, if any) and sends it unless the client is gone. */
function answer(
  res: ServerResponse,
  entry: LedgerInput,
  outcome: Outcome,
  ctx: SubmissionsContext,
  fault: ActiveFault | undefined,
): void {
  ctx.ledger.record({ ...withOutcome(entry, outcome), ...(fault ? { fault: fault.kind } : {}) });
  if (!res.destroyed) sendJson(res, outcome.status, outcome.body);
}

/** With the effect already applied (`after`) or not (`before`), answers as `fault` says. */
async function applyFault(
  req: IncomingMessage,
  res: ServerResponse,
  base: LedgerInput,
  prepared: Prepared,
  fault: ActiveFault,
  ctx: SubmissionsContext,
): Promise<void> {
  const after = fault.phase === 'after';
  // The effect of an `after` fault happens first, whatever the fault then does to the answer.
  const done = after ? prepared.apply() : undefined;
  const entry: LedgerInput = {
    ...base,
    ...prepared.facts,
    ...(done?.reference === undefined ? {} : { reference: done.reference }),
    ...(done?.submissionId === undefined ? {} : { submissionId: done.submissionId }),
    effect: done?.effect ?? false,
  };
  const kind = fault.kind;
  switch (kind) {
    case 'status': {
      const status = fault.status ?? 503;
      ctx.ledger.record({ ...entry, status, fault: kind });
      const headers: Record<string, string> = fault.retryAfter ? { 'retry-after': fault.retryAfter } : {};
      sendJson(res, status, { error: 'injected_fault', message: `injected status ${status}` }, headers);
      return;
    }
    case 'reset':
      ctx.ledger.record({ ...entry, status: 0, fault: kind });
      req.socket.resetAndDestroy();
      return;
    case 'delay': {
      // Late effects are a `before` matter: an `after` request has had its effect already.
      const lateEffectMs = after ? 0 : (fault.lateEffectMs ?? ctx.lateEffectMs);
      // A client leaving during the wait is recorded by delayFault (499 `client_closed`, with this
      // entry's effect), unless it left late enough for a late effect; either is the only entry.
      const end = await delayFault(res, entry, ctx, fault.delayMs ?? 0, lateEffectMs);
      if (!end.fired) {
        // Cancelled by close(): a `before` request never reached processing and leaves no entry
        // (but one whose client had left still counts as that client's 499); an `after` one did
        // its effect, which the ledger must count.
        if (done) ctx.ledger.record({ ...entry, status: 0, fault: kind });
        else if (end.client === 'late') ctx.ledger.record({ ...entry, status: 499, fault: 'client_closed' });
        req.socket.destroy();
        return;
      }
      // A `before` request whose client left early timed out before any effect: apply nothing.
      if (end.client === 'dropped') return;
      if (end.client === 'late') {
        // The partner finishes what it started although nobody waits for the answer.
        const outcome = prepared.apply();
        ctx.ledger.record({
          ...withOutcome(entry, outcome),
          status: 499,
          fault: 'client_closed',
          late: true,
        });
        return;
      }
      answer(res, entry, done ?? prepared.apply(), ctx, fault);
      return;
    }
    case 'truncate':
    case 'malformed':
    case 'schema':
    case 'oversize':
      // parseFaultSpec refuses these kinds for route "submissions".
      throw new Error(`fault kind ${kind} is not supported on /submissions`);
    default: {
      const unknownKind: never = kind;
      throw new Error(`unhandled fault kind ${String(unknownKind)}`);
    }
  }
}

/**
 * Serves the non-idempotent submissions API, applying at most one injected fault of route
 * `submissions` (see `FaultKind` for what each phase and kind does):
 * - `POST /submissions` `{ reference, summary? }` → 201 receipt of a NEW submission (every call
 *   creates one); 400 `invalid_submission`/`invalid_json`, 413 `body_too_large`;
 * - `POST /submissions/:id/confirm` → 200 receipt (idempotent by id); 409 `voided`; 404;
 * - `POST /submissions/:id/void` → 200 receipt (the compensation; idempotent by id); 404;
 * - `GET /submissions?reference=` → 200 `{ submissions }` (any status, oldest first); 400
 *   `missing_reference`. Other methods → 405, other paths under `/submissions/` → 404.
 * Receipts are the submission without its summary. Faults only see well-formed requests on known
 * submissions. Side effects: consumes the fault, creates or changes submissions, and appends exactly
 * one ledger entry per request (`action`, `reference`, `submissionId`, `effect`; a client leaving
 * during a delay gets the 499 `client_closed` one, with `late: true` when the request was still
 * processed after it left); a `before` delay cancelled by `close()` leaves none (unless its client
 * had left), an `after` one a status-0 entry with its effect. Answers every client error itself;
 * throws only on a bug.
 */
export async function handleSubmissions(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  ctx: SubmissionsContext,
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
    const match = ACTION_ROUTE.exec(url.pathname);
    if (url.pathname === SUBMISSIONS_PATH) {
      const action: SubmissionAction | undefined =
        method === 'POST' ? 'submit' : method === 'GET' ? 'lookup' : undefined;
      if (!action)
        return fail(new HttpError(405, 'method_not_allowed', 'use GET or POST'), { allow: 'GET, POST' });
      base = { ...base, action };
      prepared = action === 'submit' ? await prepareSubmit(req, ctx) : prepareLookup(url, ctx);
    } else if (match?.[1] && (match[2] === 'confirm' || match[2] === 'void')) {
      const action = match[2];
      const id = decodeId(match[1]);
      base = { ...base, action, submissionId: id };
      if (method !== 'POST') {
        return fail(new HttpError(405, 'method_not_allowed', 'use POST'), { allow: 'POST' });
      }
      prepared = prepareChange(action, id, ctx);
    } else {
      throw new HttpError(404, 'not_found', `no route ${method} ${url.pathname}`);
    }
  } catch (error) {
    if (error instanceof HttpError) return fail(error);
    throw error;
  }
  const fault = ctx.faults.take(prepared.target);
  if (!fault) return answer(res, { ...base, ...prepared.facts }, prepared.apply(), ctx, undefined);
  await applyFault(req, res, { ...base, ...prepared.facts }, prepared, fault, ctx);
}
