/** What a reconcile takes: its dependencies, which runs, and how it reports progress. */
import type { HttpClient } from '../../activities/http.ts';
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';

/** What reconciling needs: the database, an HTTP client for the partner, and secrets by reference. */
export interface ReconcileContext {
  prisma: PrismaClient;
  http: HttpClient;
  /** Resolves a source's credentials reference (e.g. `DF_SECRET_ACME`) to its token, at call time. */
  secret: (ref: string) => string | undefined;
  /** Records asked per partner page (the partner may serve fewer). Default 50; 1..500. */
  pageLimit?: number;
  /** Deadline of one partner request, in ms. Default 30 s. */
  requestTimeoutMs?: number;
  /** The jobs whose partners are read; default those of jobs/index.ts. */
  jobs?: JobRegistry;
}

/** Exactly one of `runId` or `date`; `sourceId` and `jobType` narrow a date's runs. */
export interface ReconcileSelector {
  /** FetchRun id, workflow id, or `<source>/<date>`. */
  runId?: string;
  /** `YYYY-MM-DD`: every run of that business date. */
  date?: string;
  sourceId?: string;
  /** With `date`: only runs of this job type, e.g. `exchange-rates`. */
  jobType?: string;
}

export interface ReconcileOptions {
  /** Called after each run is checked (for progress output). */
  onProgress?: (done: number, total: number) => void;
}
