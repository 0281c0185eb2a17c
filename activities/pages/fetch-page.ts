/**
 * `fetchPage`: collects one stored page's worth of records from the partner, following the
 * partner's own cursors, and stages them in PostgreSQL (`fetched_page`) as it goes. It heartbeats
 * the cursor (unless it runs as a local activity); a retried attempt resumes from what is staged
 * instead of asking the partner again. A partner response larger than the page's room is staged
 * whole: its overflow as the pages after this one (activities/pages/carried-pages.ts), which their own
 * fetchPage then finds staged.
 */
import { Context } from '@temporalio/activity';
import {
  appendToStagedPage,
  cursorSeen,
  dropStaleStagedPage,
  heldAtPageNow,
  loadStagedPage,
  type StagedPage,
  startPageCursors,
} from '../../db/pages/staging.ts';
import { breakerScope } from '../../db/ledger/downstreams.ts';
import { admitCallSql } from '../../db/retry/admission-sql.ts';
import { type Admission, admissionOf, releaseTrial } from '../../db/retry/breaker.ts';
import { errorMessage } from '../../runtime/errors.ts';
import { renewAndStartPage } from '../../db/pages/stored-page.ts';
import { pageWatermarkOf, runWindow } from './window.ts';
import { engineSql, type EngineSql } from '../../db/transaction.ts';
import { jobTypeOf, pageKeyFor } from '../../contract/business-key.ts';
import type { FetchPageInput, FetchPageResult } from '../../contract/types.ts';
import type { PageFence } from '../../db/fence.ts';
import type { ActivityDeps } from '../deps.ts';
import {
  firstCallIsRetry,
  type PartnerAsked,
  rememberLocalAsked,
  throughBreaker,
} from '../retry/breaker-guard.ts';
import { failure } from '../errors.ts';
import { crashPoint } from '../../runtime/crash-points.ts';
import { heartbeatEvery, heartbeatNow } from '../run/heartbeat.ts';
import { partnerCallSignal } from './local-stop.ts';
import { observed } from '../observe.ts';
import { currentRunId, lostLease, renewLease } from '../run/lease.ts';
import { checkedPage, idOf, inJob, jobOf, MAX_RECORDS_PER_RESPONSE, partnerAccess } from '../job-runtime.ts';
import { carriedPageOf, spreadResponse } from './carried-pages.ts';
import { enabledSource } from '../sources.ts';

/**
 * Heartbeat details: where this page's fetch got to (no records: they are staged), and whether a
 * partner call was asked for (let through or refused by the breaker) whose answer is not staged
 * yet: the next attempt's first call repeats it, a retry for R8's budget (`partnerAsked`).
 */
export interface FetchProgress extends PartnerAsked {
  pageNo: number;
  cursor: string | null;
  recordCount: number;
}

/**
 * Fetches up to `pageSize` records starting at `cursor` and stages them under the page's key
 * `fetch-records:<source>:<date>:page:<n>` (the `Idempotency-Key` of every partner call too).
 * A partner response with more records than the page has room for is staged whole, in the same
 * statement: the rest as the pages after it, each under its own key, which this page's next
 * cursor (a carry cursor) leads to; a page staged that way is returned at once, or continued from
 * the partner's cursor when it is not full. Repeat-safe: a read at the partner, and conditional
 * appends to the staged page, so that a retry continues from the staged cursor and two concurrent
 * attempts never duplicate records (R1, R9). Returns only the count and the next cursor. A page
 * this claim stored already (an execution reset to an earlier point of its history asks again) is
 * returned as stored, fetching nothing.
 * @throws ApplicationFailure NotFound/PermissionDenied (source gone, disabled or missing
 *   credentials), NotFound `CARRIED_PAGE_MISSING` (a page the page before staged is gone: expired
 *   before the run came back to it), LeaseLost (another owner holds the run, or another attempt
 *   stored the page while this one fetched it),
 *   InvalidResponse (a page off the partner contract: its shape, more records in one response
 *   than the engine takes (`TOO_MANY_RECORDS`), a cursor too long or not advancing,
 *   `CURSOR_LOOP` for a cursor the run reached before, an empty page with a cursor, a body over
 *   the byte cap), CircuitOpen (the downstream's breaker or retry budget held the call back:
 *   activities/retry/breaker-guard.ts), and the HTTP client's typed failures.
 */
export function createFetchPage(deps: ActivityDeps) {
  return async function fetchPage(input: FetchPageInput): Promise<FetchPageResult> {
    const ctx = Context.current();
    // R8's budget counts as retries only calls that repeat one asked for before: the first call of
    // an attempt after one that asked the partner (the breaker answered) and staged no answer, or
    // of a step run again after a wait. An attempt that failed before asking (our database down)
    // makes the next one's first call no retry. Kept for the next attempt at once, in case this one
    // fails before asking anything of its own: as heartbeat details (an activity task), or in this
    // worker (a local activity).
    const carried = firstCallIsRetry(ctx.info);
    const firstIsRetry = carried || input.rerun === true;
    if (ctx.info.isLocal) rememberLocalAsked(ctx.info, firstIsRetry);
    else if (carried) ctx.heartbeat(ctx.info.heartbeatDetails);
    // The engine's statements skip the Prisma client (db/transaction.ts).
    const db = engineSql(deps.prisma);
    const fence = { fetchRunId: input.fetchRunId, leaseToken: input.leaseToken, pageNo: input.pageNo };
    const key = pageKeyFor({ ...input, jobType: jobTypeOf(input) }, input.pageNo);
    // Every attempt renews the lease first: a partner outage retried for minutes keeps the run ours.
    // The same statement reads where the page stands, and the source as it is now.
    const start = await renewAndStartPage(db, key, fence, deps.leaseTtlMs, currentRunId(), input.sourceId);
    if (!start) throw await lostLease(db, fence);
    let renewedAt = Date.now();
    const source = enabledSource(start.source, input.sourceId);
    const { job, view } = jobOf(deps, source);
    // Before any other work: a source without its credentials fails here (PermissionDenied). Its
    // calls get the fetch's own stop signal below (activities/pages/local-stop.ts).
    const access = partnerAccess(deps, source, ctx.cancellationSignal);
    const what = `partner ${source.id} (job ${job.type}) page`;

    // Stored already under this lease (the execution was reset to before the page was stored):
    // this claim's own page, given back as stored; the partner is not asked again.
    if (start.stored) {
      ctx.log.info('page stored already by this claim', { pageNo: input.pageNo });
      return start.stored;
    }
    const spec = job.watermark?.(view.config);
    const window =
      spec === undefined
        ? undefined
        : await runWindow(db, fence, start, spec, input, source.timezone, deps.now());
    let staged = start.staged;
    // Partner pages the run staged before this call: what a job's page limit counts.
    let pagesFetched = start.pagesFetched;
    if (carriedPageOf(input.cursor) !== undefined && staged?.startCursor !== input.cursor) {
      // The page was staged whole by the page before it, from one partner response, and is gone:
      // the partner's cursor would skip its records, and asking for that response again would
      // trust the partner to send the same records in the same order. Failing says so.
      throw failure(
        'NotFound',
        'CARRIED_PAGE_MISSING',
        `page ${key}: the records the partner sent for it with the page before were staged and are gone (expired?)`,
      );
    }
    if (staged && staged.startCursor !== input.cursor) {
      // Staged by a run that started this page elsewhere (partner data changed since): start over.
      await dropStaleStagedPage(db, key, fence);
      staged = undefined;
      // The page's cursors went with it.
      pagesFetched = await startPageCursors(db, key, fence);
    }
    if (staged) {
      const beat = ctx.info.heartbeatDetails as FetchProgress | undefined;
      const carried = carriedPageOf(input.cursor) !== undefined;
      ctx.log.info(carried ? 'page staged by the page before it' : 'resuming staged page', {
        pageNo: input.pageNo,
        records: staged.recordCount,
        beat,
      });
    }
    const state = (s: StagedPage | undefined) => ({
      cursor: s ? s.cursor : input.cursor,
      recordCount: s?.recordCount ?? 0,
      complete: s?.complete ?? false,
    });
    let at = state(staged);
    const settings = breakerScope(await deps.downstreams(source.downstream), source.id);
    let retry = firstIsRetry;
    let partnerAsked = retry;
    const progress = (): FetchProgress => ({
      pageNo: input.pageNo,
      cursor: at.cursor,
      recordCount: at.recordCount,
      partnerAsked,
    });
    const asked = () => {
      partnerAsked = true;
      // At once, not at the next tick: an attempt failing now reports it with its failure.
      heartbeatNow(ctx, progress());
    };
    // On a timer too, not only between partner pages: a hanging request must still see a cancel.
    // Nothing between these and the `try` may throw: the `finally` stops them.
    const stopHeartbeats = heartbeatEvery(ctx, progress);
    const calls = partnerCallSignal(ctx, deps.stopping);
    // The breaker's answer for the next partner call, asked by the append of the response before.
    let admitted: Admission | undefined;
    try {
      // A staged page that ends at a carry cursor is whole: the rest of its response is staged as
      // the page after it (a run that comes back with a larger page size must not hand the
      // engine's cursor to the job, or go on past the pages it carried).
      const wantsMore = (page: { complete: boolean; recordCount: number; cursor: string | null }) =>
        !page.complete && page.recordCount < input.pageSize && carriedPageOf(page.cursor) === undefined;
      while (wantsMore(at)) {
        const room = input.pageSize - at.recordCount;
        const limit = Math.min(deps.partnerPageLimit, room);
        const guard = { settings, retry, what, onAnswered: asked };
        retry = false;
        const given = admitted;
        admitted = undefined;
        const fetched = await throughBreaker(
          deps,
          guard,
          () =>
            observed(
              deps,
              source.id,
              inJob(job, 'fetchPage', () =>
                job.fetchPage({
                  ...access,
                  signal: calls.signal,
                  source: view,
                  businessDate: input.businessDate,
                  cursor: at.cursor,
                  limit,
                  idempotencyKey: key,
                  pagesFetched,
                  ...(window === undefined ? {} : { window }),
                }),
              ),
            ),
          given,
        );
        // A partner may send more than `limit`: what does not fit is staged as the next pages.
        const page = checkedPage(job, fetched, MAX_RECORDS_PER_RESPONSE, what);
        // Refused before it is staged: a record the window cannot place would be missed later.
        if (spec !== undefined) pageWatermarkOf(spec, page.records, (r) => idOf(job, r, what), false, what);
        crashPoint(deps.crashPoint, 'after-fetch');
        if (page.warnings?.length) {
          // What the job saw amiss without failing the page (a cursor path that never resolved).
          ctx.log.warn('the job warns about a partner response', {
            pageNo: input.pageNo,
            warnings: page.warnings,
          });
        }
        if (page.records.length === 0 && page.nextCursor !== null) {
          // A partner that pages forever without data would keep this loop alive.
          throw failure(
            'InvalidResponse',
            'EMPTY_PAGE_WITH_CURSOR',
            `${what}: empty page with a next cursor`,
          );
        }
        if (page.nextCursor !== null && page.nextCursor === at.cursor) {
          // Nor would a cursor that does not move.
          throw failure(
            'InvalidResponse',
            'CURSOR_NOT_ADVANCING',
            `${what}: next cursor equals the current one`,
          );
        }
        const now = deps.now();
        const from = staged ? { cursor: at.cursor, recordCount: at.recordCount } : undefined;
        const spread = spreadResponse(page, room, input.pageSize, input.pageNo);
        // The page goes on after this response (the loop's condition, on the state the append
        // leaves): the append asks the breaker for the next call too, in the same statement.
        const goesOn = wantsMore({
          complete: spread.complete,
          recordCount: at.recordCount + spread.records.length,
          cursor: spread.cursor,
        });
        const appended = await appendToStagedPage(db, {
          key,
          fence,
          startCursor: input.cursor,
          from,
          records: spread.records,
          cursor: spread.cursor,
          complete: spread.complete,
          carried: spread.carried.map((c) => ({
            key: pageKeyFor({ ...input, jobType: jobTypeOf(input) }, c.pageNo),
            startCursor: c.startCursor,
            cursor: c.cursor,
            complete: c.complete,
            records: c.records,
          })),
          now,
          expiresAt: new Date(now.getTime() + deps.idempotencyRetentionMs),
          ...(goesOn ? { admitNext: admitCallSql(settings, false) } : {}),
        });
        if (appended) {
          if (appended.admission) admitted = admissionOf(appended.admission, settings);
          // Applied under the fence: the lease held just now, and the page is where the append
          // left it. The lease is renewed again once a quarter of its time has gone by (a page of
          // many partner calls), not after every call.
          staged = appended;
          pagesFetched += 1;
          if (Date.now() - renewedAt >= deps.leaseTtlMs / 4) {
            await renewLease(db, fence, deps.leaseTtlMs);
            renewedAt = Date.now();
          }
        } else {
          // Not applied: either we lost the lease (renewLease throws LeaseLost) or a concurrent
          // attempt staged first, and we continue from what it staged.
          await renewLease(db, fence, deps.leaseTtlMs);
          renewedAt = Date.now();
          staged = await loadStagedPage(db, key);
          if (page.nextCursor !== null && unchanged(staged, from)) {
            await refuseLoop(db, fence, page.nextCursor, what);
          }
          if (!staged) {
            throw failure('LeaseLost', 'PAGE_ALREADY_STORED', `page ${key} was stored by another attempt`);
          }
          ctx.log.warn('another attempt staged this page first', { pageNo: input.pageNo });
        }
        at = state(staged);
        // The answer is staged: a later attempt resumes past it, asking something new.
        partnerAsked = false;
        heartbeatNow(ctx, progress());
      }
    } finally {
      stopHeartbeats();
      calls.release();
      // A local attempt's heartbeat details: for its next attempt in this worker.
      if (ctx.info.isLocal) rememberLocalAsked(ctx.info, partnerAsked);
      // A trial place taken for a call that will not be made goes to the next call.
      if (admitted?.admitted === true && admitted.trial) await releaseUnusedTrial(deps, settings.id);
    }
    if (ctx.info.isLocal) rememberLocalAsked(ctx.info, undefined);
    return { recordCount: at.recordCount, nextCursor: at.complete ? null : at.cursor };
  };
}

/** True when the staged page is still where an append that did not apply found it. */
function unchanged(
  staged: StagedPage | undefined,
  from: { cursor: string | null; recordCount: number } | undefined,
): boolean {
  if (!staged || !from) return staged === undefined && from === undefined;
  return !staged.complete && staged.cursor === from.cursor && staged.recordCount === from.recordCount;
}

/**
 * An append that did not apply, with the lease held and the staged page untouched, failed its loop
 * check when the run is still at the page and has reached `cursor` before.
 * @throws ApplicationFailure InvalidResponse `CURSOR_LOOP` then.
 */
async function refuseLoop(db: EngineSql, fence: PageFence, cursor: string, what: string): Promise<void> {
  if ((await heldAtPageNow(db, fence)) && (await cursorSeen(db, fence.fetchRunId, cursor))) {
    throw failure(
      'InvalidResponse',
      'CURSOR_LOOP',
      `${what}: the partner's next cursor is one this run reached before (a pagination loop)`,
    );
  }
}

/** Frees a breaker trial place this attempt was given and did not use (logged when it cannot). */
async function releaseUnusedTrial(deps: ActivityDeps, downstream: string): Promise<void> {
  try {
    await releaseTrial(engineSql(deps.prisma), downstream);
  } catch (err) {
    deps.log.warn({ downstream, err: errorMessage(err) }, 'could not free an unused breaker trial place');
  }
}
