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
import type { LedgerInput } from './ledger.ts';
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
export interface SubmissionsContext extends EffectContext {
  submissions: SubmissionStore;
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
  await serveEffect(req, res, base, prepared, ctx, SUBMISSIONS_PATH);
}
