/**
 * The demo partner's records API (`GET /sources/:id/records?date&cursor&limit →
 * {records, nextCursor}`), as the fetch-records job calls it. Responses are validated (zod).
 */
import { z } from 'zod';
import { failure } from '../../activities/job-api/index.ts';
import type { FetchContext, FetchedPage } from '../../activities/job-api/index.ts';

export const partnerRecordSchema = z.looseObject({ id: z.string().min(1).max(200) });
export type PartnerRecord = z.infer<typeof partnerRecordSchema>;

const pageSchema = z.object({
  records: z.array(partnerRecordSchema),
  nextCursor: z.string().min(1).nullable(),
});

/**
 * Fetches one partner page. Safe to repeat (a read); carries the step's idempotency key anyway.
 * @throws ApplicationFailure InvalidResponse `PAGE_SHAPE` when the body does not match the
 *   contract; whatever the HTTP client throws.
 */
export async function fetchRecordsPage(ctx: FetchContext<unknown>): Promise<FetchedPage<PartnerRecord>> {
  const { source } = ctx;
  const url = new URL(`sources/${encodeURIComponent(source.id)}/records`, withSlash(source.baseUrl));
  url.searchParams.set('date', ctx.businessDate);
  url.searchParams.set('limit', String(ctx.limit));
  if (ctx.cursor !== null) url.searchParams.set('cursor', ctx.cursor);
  const headers: Record<string, string> = {
    accept: 'application/json',
    'idempotency-key': ctx.idempotencyKey,
  };
  if (ctx.token !== undefined) headers.authorization = `Bearer ${ctx.token}`;
  const body = await ctx.http.getJson(url, {
    signal: ctx.signal,
    headers,
    what: `partner ${source.id} records`,
  });
  const parsed = pageSchema.safeParse(body);
  if (!parsed.success) {
    // Where and which rule, never the value (a partner's data stays out of dead letters).
    const [issue] = parsed.error.issues;
    const rule = issue ? ` (${issue.path.join('.') || 'body'}: ${issue.message})` : '';
    throw failure(
      'InvalidResponse',
      'PAGE_SHAPE',
      `partner ${source.id} records: unexpected response shape${rule}`,
    );
  }
  return parsed.data;
}

export function withSlash(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}
