/**
 * Client of the partner records API (`GET /sources/:id/records?date&cursor&limit`), shared by every
 * partner that speaks this shape, the demo partner included. Responses are validated (zod).
 */
import { z } from 'zod';
import { failure } from './errors.ts';
import type { HttpClient } from './http.ts';

/**
 * Longest partner cursor accepted, in characters. A cursor is heartbeated to Temporal, kept in the
 * workflow's history and state, staged in PostgreSQL and sent back in a URL: a partner must not be
 * able to make any of these grow without bound.
 */
export const MAX_CURSOR_LENGTH = 1024;

export const partnerRecordSchema = z.looseObject({ id: z.string().min(1).max(200) });
export type PartnerRecord = z.infer<typeof partnerRecordSchema>;

const pageSchema = z.object({
  records: z.array(partnerRecordSchema),
  nextCursor: z.string().min(1).nullable(),
});
export type PartnerPage = z.infer<typeof pageSchema>;

export interface PageRequest {
  baseUrl: string;
  sourceId: string;
  businessDate: string;
  cursor: string | null;
  limit: number;
  /** Bearer token resolved from the source's credentials reference at call time, if any. */
  token?: string;
  idempotencyKey: string;
  signal: AbortSignal;
}

/**
 * Fetches one partner page. Safe to repeat (a read); carries the step's idempotency key anyway.
 * @throws ApplicationFailure: InvalidResponse (non-retryable) when the body does not match the
 *   contract (`PAGE_SHAPE`), holds more records than `limit` asked for (`TOO_MANY_RECORDS`), or
 *   a next cursor longer than {@link MAX_CURSOR_LENGTH} (`CURSOR_TOO_LONG`); and whatever
 *   {@link HttpClient.getJson} throws.
 */
export async function fetchPartnerPage(http: HttpClient, req: PageRequest): Promise<PartnerPage> {
  const url = new URL(`sources/${encodeURIComponent(req.sourceId)}/records`, withSlash(req.baseUrl));
  url.searchParams.set('date', req.businessDate);
  url.searchParams.set('limit', String(req.limit));
  if (req.cursor !== null) url.searchParams.set('cursor', req.cursor);
  const headers: Record<string, string> = {
    accept: 'application/json',
    'idempotency-key': req.idempotencyKey,
  };
  if (req.token !== undefined) headers.authorization = `Bearer ${req.token}`;
  const body = await http.getJson(url, {
    signal: req.signal,
    headers,
    what: `partner ${req.sourceId} records`,
  });
  const parsed = pageSchema.safeParse(body);
  if (!parsed.success) {
    throw failure(
      'InvalidResponse',
      'PAGE_SHAPE',
      `partner ${req.sourceId} records: unexpected response shape`,
    );
  }
  const page = parsed.data;
  // A partner ignoring the limit would make a stored page, and its transaction, as big as it likes.
  if (page.records.length > req.limit) {
    throw failure(
      'InvalidResponse',
      'TOO_MANY_RECORDS',
      `partner ${req.sourceId} records: ${page.records.length} records on a page of at most ${req.limit}`,
    );
  }
  if (page.nextCursor !== null && page.nextCursor.length > MAX_CURSOR_LENGTH) {
    throw failure(
      'InvalidResponse',
      'CURSOR_TOO_LONG',
      `partner ${req.sourceId} records: next cursor longer than ${MAX_CURSOR_LENGTH} characters`,
    );
  }
  return page;
}

function withSlash(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}
