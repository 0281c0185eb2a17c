/**
 * Client of the partner records API (`GET /sources/:id/records?date&cursor&limit`), shared by every
 * partner that speaks this shape, the demo partner included. Responses are validated (zod).
 */
import { z } from 'zod';
import { failure } from './errors.ts';
import type { HttpClient } from './http.ts';

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
 * @throws ApplicationFailure: InvalidResponse when the body does not match the contract, and
 *   whatever {@link HttpClient.getJson} throws.
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
  return parsed.data;
}

function withSlash(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}
