/**
 * The stack the Terminate matrix runs on: its own database, the demo partner, a Temporal client
 * and one real `durable-fetch worker` process with a 2 s lease and a 1 s stuck-run sweep, plus the
 * steps every cell takes (a source, a start, waiting for a held call, waiting for the sweep to
 * settle) and the record of each cell for the printed matrix.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { launchFetch, prepareFetch, type StartedFetch } from '../../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../../partner/server.ts';
import type { FetchRun, Prisma } from '../../prisma/generated/client.ts';
import { useTestDatabase, type TestDatabase } from './database.ts';
import { createSource } from './deps.ts';
import { spawnWorker, type Spawned } from './process.ts';
import { type Cell, matrixTable, measure, type Measured, until } from './terminate-kit.ts';
import { temporalAddress, testClient } from './temporal.ts';

export const DATE = '2026-07-07';
/** Records the partner serves per source: three pages of 50. */
export const RECORDS = 120;
/** Bound on anything waiting for the worker: settle windows (~23 s here) plus a few passes. */
const WAIT_MS = 120_000;
/** Ledger states that need nothing more (needs_manual waits for a human, and is asserted on). */
const FINAL = ['compensated', 'not_applied', 'resolved', 'needs_manual'];

export interface TerminateStack {
  db: TestDatabase;
  partner: PartnerServer;
  client: Client;
  worker: Spawned;
  /** DATABASE_URL, TEMPORAL_ADDRESS and the task queue, for the CLI. */
  env: Record<string, string>;
  /** Adds a source of 50-record pages whose submissions settle within 2 s. */
  source(
    id: string,
    extra?: Omit<Prisma.SourceUncheckedCreateInput, 'id' | 'name' | 'baseUrl'>,
  ): Promise<void>;
  start(sourceId: string, pagesPerExecution?: number): Promise<StartedFetch>;
  wait<T>(check: () => Promise<T | undefined>, what: string): Promise<T>;
  /** Until the partner has taken up the fault `id` (a fault is gone once it fired its times). */
  held(faultId: string, what: string): Promise<true>;
  /** Until the run is no longer `running`, its ledger rows settled and, with any, the run too. */
  settled(sourceId: string): Promise<FetchRun>;
  /** Measures the run, keeps it for the matrix, and asserts what holds in every cell. */
  record(state: string, terminate: string, sourceId: string): Promise<Measured>;
  /** Prints the matrix and stops everything. */
  stop(): Promise<void>;
}

export async function startTerminateStack(): Promise<TerminateStack> {
  const [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => RECORDS }),
    testClient(),
  ]);
  const taskQueue = `test-terminate-${randomUUID()}`;
  const env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: taskQueue,
  };
  const worker = spawnWorker({
    ...env,
    DURABLE_FETCH_LEASE_TTL_MS: '2000',
    DURABLE_FETCH_SWEEP_INTERVAL_MS: '1000',
    DURABLE_FETCH_CLEANUP_INTERVAL_MS: '0',
    // Held calls (15 s) stay within the response timeout; a submit's settle window is ~23 s.
    HTTP_CONNECT_TIMEOUT_MS: '1000',
    HTTP_RESPONSE_TIMEOUT_MS: '20000',
    LOG_LEVEL: 'warn',
  });
  await worker.waitFor(/worker polling task queue/, 60_000);
  const cells: Cell[] = [];
  const wait = <T>(check: () => Promise<T | undefined>, what: string) =>
    until(check, () => `${what}:\n${worker.output().slice(-4000)}`, WAIT_MS);
  return {
    db,
    partner,
    client,
    worker,
    env,
    wait,
    source: (id, extra = {}) =>
      createSource(db.prisma, id, partner.url, { pageSize: 50, submitMaxProcessingMs: 2_000, ...extra }),
    async start(sourceId, pagesPerExecution) {
      const ctx = { temporal: client, prisma: db.prisma, taskQueue };
      const prepared = await prepareFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
      const input = { ...prepared.input, ...(pagesPerExecution ? { pagesPerExecution } : {}) };
      return launchFetch(ctx, { ...prepared, input });
    },
    held: (faultId, what) =>
      wait(
        () => Promise.resolve(partner.faults.list().some((f) => f.id === faultId) ? undefined : true),
        what,
      ),
    settled: (sourceId) =>
      wait(async () => {
        const run = await db.prisma.fetchRun.findFirstOrThrow({
          where: { sourceId },
          include: { downstreamActions: true },
        });
        const actions = run.downstreamActions;
        const kept = (state: string) => run.status === 'succeeded' && state === 'confirmed';
        if (run.status === 'running' || !actions.every((a) => FINAL.includes(a.state) || kept(a.state)))
          return;
        // A failed run with actions ends `compensated` once they are settled (needs_manual: never).
        const waiting = actions.length > 0 && run.status === 'dead_lettered';
        return waiting && !actions.some((a) => a.state === 'needs_manual') ? undefined : run;
      }, `the sweep to settle ${sourceId}`),
    async record(state, terminate, sourceId) {
      const measured = await measure(db.prisma, partner, sourceId);
      cells.push({ state, terminate, measured });
      assert.equal(measured.duplicateEvents, 0, 'no outbox event twice');
      assert.equal(measured.records, measured.recordsStored, 'each record stored once');
      assert.ok(measured.submits <= 1, 'never a second submission');
      assert.equal(measured.orphaned, 0, 'nothing left orphaned');
      return measured;
    },
    async stop() {
      if (cells.length > 0) console.log(`\nTerminate matrix (measured):\n${matrixTable(cells)}\n`);
      await worker.stop('SIGKILL', 5_000);
      await client.connection.close();
      await partner.close();
      await db.drop();
    },
  };
}
