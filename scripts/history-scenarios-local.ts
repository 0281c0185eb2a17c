/**
 * History scenarios of runs whose database steps are local activities (workflows/db-steps.ts):
 * a plain run, one that submits a summary, and one paused and resumed at a page boundary; and a
 * run of a source whose page fetches are local too (workflows/partner-dispatch.ts), and one whose
 * downstream confirm is local with them (workflows/submit-summary.ts); and a run whose claim
 * outlasts its database refusing connections (workflows/database-outage.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { temporal } from '@temporalio/proto';
import { launchFetch, prepareFetch, startFetch } from '../client/start-fetch.ts';
import { refuseConnections } from '../test/helpers/database.ts';
import { DATE, fetchOf, type Scenario, settled, source, WAIT_MS } from './history-scenario-steps.ts';
import { pausedAndResumed } from './history-scenarios-fetch.ts';

export const localSteps: Scenario = {
  name: 'local-steps',
  async run(s) {
    await source(s, 'hist-local');
    return [await fetchOf(s, 'hist-local', 'fetch-records-local-steps')];
  },
};

export const localSubmit: Scenario = {
  name: 'local-submit',
  async run(s) {
    await source(s, 'hist-local-submit', { submitSummary: true });
    return [await fetchOf(s, 'hist-local-submit', 'fetch-records-local-submit')];
  },
};

export const localPause: Scenario = {
  name: 'local-pause',
  run: (s) => pausedAndResumed(s, 'hist-local-pause', 'fetch-records-local-pause'),
};

export const localFetch: Scenario = {
  name: 'local-fetch',
  async run(s) {
    const sourceId = 'hist-local-fetch';
    await source(s, sourceId, { localFetch: true });
    // The first call answers 503: the local fetch's own retry asks again.
    s.partner.faults.add({ sourceId, kind: 'status', status: 503 });
    // Two pages, one per execution: the second fetches locally because its resume state says so.
    const prepared = await prepareFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
    const started = await launchFetch(s.ctx, {
      ...prepared,
      input: { ...prepared.input, pagesPerExecution: 1 },
    });
    await settled(started.handle);
    return [{ name: 'fetch-records-local-fetch', workflowId: started.workflowId, runId: started.runId }];
  },
};

export const localFetchTimer: Scenario = {
  name: 'local-fetch-timer',
  async run(s) {
    const sourceId = 'hist-local-fetch-timer';
    await source(s, sourceId, { localFetch: true });
    // Past the local retry threshold (10 s): the retry waits on a durable timer, not in the task.
    s.partner.faults.add({ sourceId, kind: 'status', status: 429, retryAfter: '12' });
    return [await fetchOf(s, sourceId, 'fetch-records-local-fetch-timer')];
  },
};

export const localConfirm: Scenario = {
  name: 'local-confirm',
  async run(s) {
    const sourceId = 'hist-local-confirm';
    await source(s, sourceId, { localFetch: true, submitSummary: true });
    // The first confirm answers 503: the local confirm's own retry confirms again.
    s.partner.faults.add({
      route: 'submissions',
      action: 'confirm',
      reference: `fetch-records:${sourceId}:${DATE}:submit-summary:r1`,
      kind: 'status',
      status: 503,
    });
    return [await fetchOf(s, sourceId, 'fetch-run-local-confirm')];
  },
};

/**
 * A cancel that lands while a run's local confirm is held: the server refuses the workflow task
 * (the cancel arrived during it), the execution is replayed with the cancel first, and finds its
 * row succeeded (patched: the row decides); and a run that fails for good under the same patch
 * (its end recorded before its status is shown).
 */
export const succeededRowDecides: Scenario = {
  name: 'succeeded-row-decides',
  async run(s) {
    const sourceId = 'hist-row-decides';
    await source(s, sourceId, { localFetch: true, submitSummary: true });
    const reference = `fetch-records:${sourceId}:${DATE}:submit-summary:r1`;
    s.partner.faults.add({
      route: 'submissions',
      action: 'confirm',
      reference,
      kind: 'delay',
      delayMs: WAIT_MS,
    });
    const started = await startFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
    const until = Date.now() + WAIT_MS;
    while (s.partner.faults.list().some((f) => f.reference === reference)) {
      if (Date.now() > until) throw new Error(`${sourceId}: the partner never held the confirm`);
      await sleep(100);
    }
    await started.handle.cancel();
    await settled(started.handle);
    const failing = 'hist-row-decides-dead';
    await source(s, failing);
    // Not found: non-retryable, so the run ends dead-lettered at its first page.
    s.partner.faults.add({ sourceId: failing, kind: 'status', status: 404 });
    return [
      { name: 'fetch-run-cancel-after-success', workflowId: started.workflowId, runId: started.runId },
      await fetchOf(s, failing, 'fetch-run-dead-lettered-row-decides'),
    ];
  },
};

/** A claim's local-activity attempts all refused: the step fails, waits 1–3 s and runs again. */
export const localDatabaseOutage: Scenario = {
  name: 'local-database-outage',
  async run(s) {
    const sourceId = 'hist-local-db-outage';
    await source(s, sourceId);
    // Prepared while the database answers (it reads the source); started once it refuses.
    const prepared = await prepareFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
    await refuseConnections(s.database, true);
    try {
      const started = await launchFetch(s.ctx, prepared);
      // Refused until the claim's attempts are spent and the workflow waits for the database: its
      // wait's patch marker is in the history (a local retry's own backoff timer is not that).
      const until = Date.now() + 3 * WAIT_MS;
      while (!patchedIn((await started.handle.fetchHistory()).events ?? [], BRIEF_WAIT_PATCH)) {
        if (Date.now() > until) throw new Error(`${sourceId}: the claim never waited for the database`);
        // Sessions that slip in before the refusal took effect are ended again.
        await refuseConnections(s.database, true);
        await sleep(1_000);
      }
      await refuseConnections(s.database, false);
      await settled(started.handle);
      return [
        { name: 'fetch-records-local-database-outage', workflowId: started.workflowId, runId: started.runId },
      ];
    } finally {
      await refuseConnections(s.database, false);
    }
  },
};

const BRIEF_WAIT_PATCH = 'outlast-database-outage-briefly';

/** Whether `events` (as the client fetches them) hold the patch marker of `id`. */
function patchedIn(events: readonly temporal.api.history.v1.IHistoryEvent[], id: string): boolean {
  return events.some((e) =>
    (e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads ?? []).some(
      (p) =>
        (JSON.parse(Buffer.from(p.data ?? new Uint8Array()).toString() || '{}') as { id?: string }).id === id,
    ),
  );
}
