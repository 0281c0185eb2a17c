/**
 * `sources try`: fetches a page or two of a source with its real config and job, and reports what a
 * run would store — ids, counts, the next cursor — and which guardrail would stop it, writing
 * nothing (no row, no staged page, no event; the partner sees only reads).
 */
import { ApplicationFailure } from '@temporalio/common';
import { classify, detailsOf, failure } from '../../activities/errors.ts';
import type { HttpClient } from '../../activities/http.ts';
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import {
  checkedPage,
  idOf,
  jobOf,
  MAX_RECORDS_PER_RESPONSE,
  partnerAccess,
} from '../../activities/job-runtime.ts';
import { createLogger } from '../../runtime/logger.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { errorMessage, UserFacingError } from '../../runtime/errors.ts';
import { notFound, removedError } from './common.ts';
import type { TokenProvider } from '../../activities/credentials/token-provider.ts';
import { type RunWindow, windowFor } from '../../activities/job-api/watermark.ts';
import { findWatermark } from '../../db/pages/watermark.ts';

export interface TryDeps {
  prisma: PrismaClient;
  http: HttpClient;
  secret: (ref: string) => string | undefined;
  /** OAuth2 access tokens, for a source whose auth is a credential (absent without the key). */
  tokens?: TokenProvider;
  jobs: JobRegistry;
  /** Records asked per partner request at most (the worker's `partner.pageLimit`). */
  pageLimit: number;
  /** Deadline of one partner request, in ms. */
  requestTimeoutMs: number;
}

export interface TriedPage {
  /** 1-based partner request. */
  page: number;
  cursor: string | null;
  records: number;
  ids: string[];
  nextCursor: string | null;
  /** What the job saw amiss on this page without failing it (e.g. a path that did not resolve). */
  warnings: string[];
}

export interface TryReport {
  sourceId: string;
  jobType: string;
  businessDate: string;
  pages: TriedPage[];
  records: number;
  /** The partner has no more after the last page tried. */
  complete: boolean;
  /** Why the job believes paging is complete (which of the partner's end signals held). */
  end?: string;
  /** The warnings seen on every page tried, once each, with that number of pages. */
  warnings: { warning: string; pages: number }[];
  /** An incremental source's window, as a run of the date would read it now. */
  window?: RunWindow;
  /** What would fail the run: the failure's type, code and (safe) message. */
  failure?: { type: string; code: string; message: string };
}

const QUIET = createLogger('silent');

/**
 * Tries `pages` partner requests of the source for `businessDate`.
 * @throws UserFacingError NOT_FOUND / SOURCE_REMOVED for a source that cannot be tried; a partner
 *   or guardrail failure is the report's `failure`, not thrown.
 */
export async function trySource(
  deps: TryDeps,
  opts: { sourceId: string; businessDate: string; pages: number },
): Promise<TryReport> {
  const source = await deps.prisma.source.findUnique({ where: { id: opts.sourceId } });
  if (!source) throw await notFound(deps, opts.sourceId);
  if (source.removedAt) throw removedError(source);
  const report: TryReport = {
    sourceId: source.id,
    jobType: source.jobType,
    businessDate: opts.businessDate,
    pages: [],
    records: 0,
    complete: false,
    warnings: [],
  };
  const seen = new Set<string>();
  let cursor: string | null = null;
  try {
    const { job, view } = jobOf(deps, source);
    const what = `partner ${source.id} (job ${job.type}) page`;
    // The window a run would fix now (read only: a try fixes nothing).
    const spec = job.watermark?.(view.config);
    if (spec !== undefined) {
      const watermark = await findWatermark(deps.prisma, source.id);
      const run = { businessDate: opts.businessDate, timezone: source.timezone };
      report.window = windowFor(spec, watermark, run, new Date());
    }
    for (let page = 1; page <= opts.pages; page++) {
      const limit = Math.min(deps.pageLimit, source.pageSize);
      const access = partnerAccess(
        { ...deps, log: QUIET },
        source,
        AbortSignal.timeout(deps.requestTimeoutMs),
      );
      const fetched = await job.fetchPage({
        ...access,
        source: view,
        businessDate: opts.businessDate,
        cursor,
        limit,
        idempotencyKey: `try:${source.id}:${opts.businessDate}:page:${page - 1}`,
        pagesFetched: page - 1,
        ...(report.window === undefined ? {} : { window: report.window }),
      });
      // The engine's own checks, as a run makes them (job-runtime.ts, fetch-page.ts): a response
      // larger than asked is a run's too, stored over as many pages as it needs.
      const checked = checkedPage(job, fetched, MAX_RECORDS_PER_RESPONSE, what);
      const ids = checked.records.map((r) => idOf(job, r, what));
      // A job's own words, kept only when they are what the job API says they are.
      const warnings = Array.isArray(fetched.warnings)
        ? fetched.warnings.filter((w): w is string => typeof w === 'string')
        : [];
      report.pages.push({ page, cursor, records: ids.length, ids, nextCursor: checked.nextCursor, warnings });
      report.records += ids.length;
      const next = checked.nextCursor;
      if (next === null) {
        report.complete = true;
        report.end = typeof fetched.end === 'string' ? fetched.end : 'the job returned no next cursor';
        break;
      }
      if (ids.length === 0)
        throw engineFailure('EMPTY_PAGE_WITH_CURSOR', `${what}: empty page with a next cursor`);
      if (next === cursor)
        throw engineFailure('CURSOR_NOT_ADVANCING', `${what}: next cursor equals the current one`);
      if (seen.has(next)) {
        throw engineFailure(
          'CURSOR_LOOP',
          `${what}: the partner's next cursor is one this run reached before`,
        );
      }
      seen.add(next);
      cursor = next;
    }
  } catch (err) {
    if (err instanceof UserFacingError) throw err;
    const f = classify(err, `source ${source.id}`);
    report.failure =
      f instanceof ApplicationFailure
        ? { type: f.type ?? 'Internal', code: detailsOf(f)?.code ?? 'UNKNOWN', message: f.message }
        : { type: 'Internal', code: 'UNKNOWN', message: errorMessage(err) };
  }
  countWarnings(report);
  return report;
}

/**
 * The warnings seen on every page tried (a path that never resolved in the pages seen), each once.
 * One seen on some pages only is the partner's last page speaking (a cursor left out at the end).
 */
function countWarnings(report: TryReport): void {
  const counts = new Map<string, number>();
  for (const p of report.pages) for (const w of p.warnings) counts.set(w, (counts.get(w) ?? 0) + 1);
  report.warnings = [...counts]
    .filter(([, pages]) => pages === report.pages.length)
    .map(([warning, pages]) => ({ warning, pages }));
}

function engineFailure(code: string, message: string): ApplicationFailure {
  return failure('InvalidResponse', code, message);
}
