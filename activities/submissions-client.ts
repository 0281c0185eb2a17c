/**
 * Client of a partner's submissions API (the demo job's non-idempotent downstream):
 * `POST /submissions` creates a new submission on every call (no idempotency key), `POST
 * /submissions/:id/confirm` and `/void` act on one by the partner's id (repeat-safe), and `GET
 * /submissions?reference=` lists what exists for a reference. Responses are validated (zod).
 */
import { z } from 'zod';
import { failure } from './errors.ts';
import type { HttpClient } from './http.ts';

const submissionSchema = z.looseObject({
  id: z.string().min(1).max(200),
  reference: z.string(),
  status: z.enum(['submitted', 'confirmed', 'voided']),
});
export type Submission = z.infer<typeof submissionSchema>;

const listSchema = z.object({ submissions: z.array(submissionSchema) });

/** Where and as whom to call; `token` is resolved from the source's reference at call time. */
export interface SubmissionsTarget {
  baseUrl: string;
  sourceId: string;
  token?: string;
  signal: AbortSignal;
}

function url(target: SubmissionsTarget, path: string): URL {
  const base = target.baseUrl.endsWith('/') ? target.baseUrl : `${target.baseUrl}/`;
  return new URL(path, base);
}

function headers(target: SubmissionsTarget): Record<string, string> {
  const h: Record<string, string> = { accept: 'application/json' };
  if (target.token !== undefined) h.authorization = `Bearer ${target.token}`;
  return h;
}

function parsed(body: unknown, what: string): Submission {
  const result = submissionSchema.safeParse(body);
  if (!result.success)
    throw failure('InvalidResponse', 'SUBMISSION_SHAPE', `${what}: unexpected response shape`);
  return result.data;
}

/**
 * Creates a submission. NOT idempotent: a repeat creates a second one. Callers record their intent
 * first and reconcile by `reference` whenever the outcome is unknown. The request is not sent at
 * all unless it can start before `sendBy` (a `performance.now()` instant).
 * @throws the HTTP client's typed failures (Timeout SEND_DEADLINE_PASSED when not sent in time);
 *   InvalidResponse for a 2xx without a submission.
 */
export async function createSubmission(
  http: HttpClient,
  target: SubmissionsTarget,
  body: { reference: string; summary: Record<string, number> },
  sendBy: number,
): Promise<Submission> {
  const what = `partner ${target.sourceId} submit`;
  const res = await http.postJson(url(target, 'submissions'), body, {
    signal: target.signal,
    headers: headers(target),
    what,
    sendBy,
  });
  return parsed(res, what);
}

/** Confirms (`confirm`) or voids (`void`) a submission by the partner's id. Repeat-safe. */
export async function actOnSubmission(
  http: HttpClient,
  target: SubmissionsTarget,
  id: string,
  act: 'confirm' | 'void',
): Promise<Submission> {
  const what = `partner ${target.sourceId} ${act}`;
  const res = await http.postJson(
    url(target, `submissions/${encodeURIComponent(id)}/${act}`),
    {},
    { signal: target.signal, headers: headers(target), what },
  );
  return parsed(res, what);
}

/** Every submission the partner holds for `reference` (any status), oldest first. A read. */
export async function findSubmissions(
  http: HttpClient,
  target: SubmissionsTarget,
  reference: string,
): Promise<Submission[]> {
  const what = `partner ${target.sourceId} lookup`;
  const u = url(target, 'submissions');
  u.searchParams.set('reference', reference);
  const res = await http.getJson(u, { signal: target.signal, headers: headers(target), what });
  const result = listSchema.safeParse(res);
  if (!result.success) throw failure('InvalidResponse', 'LOOKUP_SHAPE', `${what}: unexpected response shape`);
  return result.data.submissions;
}
