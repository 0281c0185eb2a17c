/**
 * `fetchPage`: collects one stored page's worth of records from the partner, following the
 * partner's own cursors, heartbeating the progress so a retry resumes where the last attempt got.
 */
import { Context } from '@temporalio/activity';
import { FETCH_RECORDS, idempotencyKeyFor } from '../workflows/business-key.ts';
import type { FetchPageInput, FetchPageResult, PartnerRecord } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';
import { failure } from './errors.ts';
import { fetchPartnerPage } from './partner-client.ts';

/** Heartbeat details: where this page's fetch got to. Bounded by the page size. */
interface Progress {
  pageNo: number;
  startCursor: string | null;
  cursor: string | null;
  records: PartnerRecord[];
  done: boolean;
}

function priorProgress(input: FetchPageInput): Progress | undefined {
  const details = Context.current().info.heartbeatDetails as Progress | undefined;
  if (details?.pageNo === input.pageNo && details.startCursor === input.cursor) return details;
  return undefined;
}

/**
 * Fetches up to `pageSize` records starting at `cursor`. A read: safe to repeat. Each partner call
 * carries `Idempotency-Key: fetch-records:<source>:<date>:page:<n>` and the activity's
 * cancellation signal; after each call the cursor and records so far are heartbeated, and a
 * retried attempt continues from them instead of asking the partner again (R9).
 * @throws ApplicationFailure NotFound/PermissionDenied (source gone, disabled or missing
 *   credentials), and the HTTP client's typed failures.
 */
export function createFetchPage(deps: ActivityDeps) {
  return async function fetchPage(input: FetchPageInput): Promise<FetchPageResult> {
    const ctx = Context.current();
    const source = await deps.prisma.source.findUnique({ where: { id: input.sourceId } });
    if (!source) throw failure('NotFound', 'SOURCE_NOT_FOUND', `source '${input.sourceId}' does not exist`);
    if (!source.enabled)
      throw failure('PermissionDenied', 'SOURCE_DISABLED', `source '${input.sourceId}' is disabled`);
    let token: string | undefined;
    if (source.credentialsRef) {
      token = deps.secret(source.credentialsRef);
      if (token === undefined) {
        throw failure(
          'PermissionDenied',
          'CREDENTIALS_MISSING',
          `credentials reference ${source.credentialsRef} of source '${source.id}' is not set`,
        );
      }
    }

    const progress: Progress = priorProgress(input) ?? {
      pageNo: input.pageNo,
      startCursor: input.cursor,
      cursor: input.cursor,
      records: [],
      done: false,
    };
    if (progress.records.length > 0) {
      ctx.log.info('resuming page from heartbeat', {
        pageNo: input.pageNo,
        records: progress.records.length,
      });
    }
    const key = { jobType: FETCH_RECORDS, sourceId: input.sourceId, businessDate: input.businessDate };
    const idempotencyKey = idempotencyKeyFor(key, 'page', input.pageNo);
    while (!progress.done && progress.records.length < input.pageSize) {
      const page = await fetchPartnerPage(deps.http, {
        baseUrl: source.baseUrl,
        sourceId: source.id,
        businessDate: input.businessDate,
        cursor: progress.cursor,
        limit: Math.min(deps.partnerPageLimit, input.pageSize - progress.records.length),
        token,
        idempotencyKey,
        signal: ctx.cancellationSignal,
      });
      if (page.records.length === 0 && page.nextCursor !== null) {
        // A partner that pages forever without data would keep this loop alive.
        throw failure(
          'InvalidResponse',
          'EMPTY_PAGE_WITH_CURSOR',
          `partner ${source.id}: empty page with a next cursor`,
        );
      }
      progress.records.push(...page.records);
      progress.cursor = page.nextCursor;
      progress.done = page.nextCursor === null;
      ctx.heartbeat(progress);
    }
    return { records: progress.records, nextCursor: progress.cursor };
  };
}
