/**
 * Reading a run's partner for reconcile: only GETs (through the job's own hooks), the source's
 * token resolved at call time. A partner that cannot be read is reported once on the run, never
 * thrown.
 */
import { ApplicationFailure } from '@temporalio/common';
import { classify } from '../../activities/errors.ts';
import type { AnyJob, DownstreamContext, DownstreamEffect } from '../../activities/job-api/define.ts';
import {
  checkedPage,
  idOf,
  jobOf,
  MAX_RECORDS_PER_RESPONSE,
  partnerAccess,
} from '../../activities/job-runtime.ts';
import type { Source } from '../../prisma/generated/client.ts';
import { errorMessage } from '../../runtime/errors.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import { createLogger } from '../../runtime/logger.ts';
import type { ReconcileContext } from './context.ts';
import type { RunReport } from './findings.ts';

/** Partner pages read for one (source, date), at most: a partner that never ends is a fault. */
const MAX_PARTNER_PAGES = 10_000;
/** Job code reading for reconcile logs nothing of its own. */
const QUIET = createLogger('silent');

/** A partner read failed: type and safe message (never a body, never a secret). */
class PartnerUnreachable extends Error {
  constructor(
    readonly errorType: string,
    message: string,
  ) {
    super(message);
  }
}

function unreachable(err: unknown, what: string): PartnerUnreachable {
  if (err instanceof PartnerUnreachable) return err;
  const f = classify(err, what);
  if (f instanceof ApplicationFailure) return new PartnerUnreachable(f.type ?? 'Internal', f.message);
  return new PartnerUnreachable('Internal', `${what}: ${errorMessage(err)}`);
}

/** Partner reads of one run; after the first failure it stops asking (reported once). */
export class PartnerReader {
  failed: PartnerUnreachable | undefined;

  constructor(
    private readonly ctx: ReconcileContext,
    private readonly source: Source,
    private readonly job: AnyJob | undefined,
  ) {}

  /** The job's view of the source and partner access for one call (token resolved now, R2). */
  private access(): DownstreamContext<unknown> & { job: AnyJob } {
    const { job, view } = jobOf({ jobs: this.ctx.jobs ?? defaultJobs() }, this.source);
    return {
      job,
      source: view,
      ...partnerAccess(
        { http: this.ctx.http, secret: this.ctx.secret, log: QUIET },
        this.source,
        this.signal(),
      ),
    };
  }

  private signal(): AbortSignal {
    return AbortSignal.timeout(this.ctx.requestTimeoutMs ?? 30_000);
  }

  /** Runs `read`; on failure records it and returns undefined (also for every later call). */
  async read<T>(what: string, read: () => Promise<T>, report: RunReport): Promise<T | undefined> {
    if (this.failed) return undefined;
    try {
      return await read();
    } catch (err) {
      this.failed = unreachable(err, what);
      report.mismatches.push({
        code: 'PARTNER_UNREACHABLE',
        message: `cannot read ${what} at ${this.source.baseUrl}: ${this.failed.message}`,
        actual: { errorType: this.failed.errorType },
      });
      return undefined;
    }
  }

  /** Every record id the partner has for the date, following nextCursor. */
  async recordIds(businessDate: string): Promise<string[]> {
    const ids: string[] = [];
    const seenCursors = new Set<string>();
    let cursor: string | null = null;
    for (let page = 0; ; page++) {
      if (page >= MAX_PARTNER_PAGES) {
        throw new PartnerUnreachable('InvalidResponse', `more than ${MAX_PARTNER_PAGES} pages`);
      }
      const { job, ...access } = this.access();
      const limit = Math.min(Math.max(this.ctx.pageLimit ?? 50, 1), 500);
      const fetched = await job.fetchPage({
        ...access,
        businessDate,
        cursor,
        limit,
        idempotencyKey: `reconcile:${this.source.id}:${businessDate}:page:${page}`,
        pagesFetched: page,
      });
      const what = `partner ${this.source.id} records`;
      // A response larger than asked is a run's too (stored over the pages after it): read it whole.
      const body = checkedPage(job, fetched, MAX_RECORDS_PER_RESPONSE, what);
      for (const r of body.records) ids.push(idOf(job, r, what));
      if (body.nextCursor === null) return ids;
      if (seenCursors.has(body.nextCursor)) {
        throw new PartnerUnreachable('InvalidResponse', `the partner repeats cursor ${body.nextCursor}`);
      }
      seenCursors.add(body.nextCursor);
      cursor = body.nextCursor;
    }
  }

  /** Every effect of the job's downstream action under `reference` (none without an action). */
  async submissions(reference: string): Promise<readonly DownstreamEffect[]> {
    const { job, ...access } = this.access();
    return job.downstream ? job.downstream.lookup(access, reference) : [];
  }
}
