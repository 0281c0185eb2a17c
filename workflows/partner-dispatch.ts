/**
 * Where a run's partner page fetches are dispatched (R8). A source whose downstream is isolated
 * fetches on that downstream's task queue (its own worker slots and server-side rate limits, so a
 * slow or failing partner holds no slot of the others); every other source on the workflow's own.
 * Each fetch carries the source as its fairness key, with its weight: Temporal then dispatches the
 * tasks of the sources sharing a queue in turn, so one source's backlog does not starve the rest.
 *
 * A source that chose local fetches (and whose downstream is not isolated) fetches as local
 * activities instead: in the worker that runs the workflow, with no activity task to schedule,
 * poll, start and complete on the server. What it gives up is its choice: no heartbeat (a worker
 * that stops is noticed by the workflow task's timeout instead, and the next worker fetches the
 * page again from what is staged), no fairness key or rate limit of a queue (the downstream's
 * breaker and retry budget still hold, in the activity), no history event per attempt.
 */
import { type ActivityOptions, patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { LOCAL_FETCH_RETRY_THRESHOLD_MS } from '../contract/retry-presets.ts';
import { type PartnerPresetName, RETRY_PRESETS } from '../contract/retry-presets.ts';
import type { ResumeState } from '../contract/types.ts';

/** Patch id: histories recorded before it fetched every page on the workflow's queue, unkeyed. */
export const DOWNSTREAM_DISPATCH = 'downstream-task-queue';

type Partner = Pick<FetchActivities, 'fetchPage'>;

const partnerProxy = (name: PartnerPresetName, dispatch: ActivityOptions = {}) =>
  proxyActivities<Partner>({ ...RETRY_PRESETS[name], ...dispatch });

/** The proxies of histories recorded before the patch: one per preset, no queue, no priority. */
const UNKEYED: Record<PartnerPresetName, Partner> = {
  partnerHttp: partnerProxy('partnerHttp'),
  partnerHttpQuick: partnerProxy('partnerHttpQuick'),
};

/**
 * The local proxy of a preset: its timeouts, retries and cancellation, without the heartbeat. Each
 * fetch carries its step's deadline (FetchPageInput.stepDeadlineMs).
 */
const localProxy = (name: PartnerPresetName): Partner => {
  const { startToCloseTimeout, scheduleToCloseTimeout, retry, cancellationType } = RETRY_PRESETS[name];
  const proxy = proxyLocalActivities<Partner>({
    startToCloseTimeout,
    scheduleToCloseTimeout,
    retry,
    cancellationType,
    // A retry waiting longer than this is a durable timer, not a sleep inside the workflow task:
    // a partner outage then holds no workflow task open while it lasts.
    localRetryThreshold: LOCAL_FETCH_RETRY_THRESHOLD_MS,
  });
  return {
    fetchPage: (input) => proxy.fetchPage({ ...input, stepDeadlineMs: Date.now() + scheduleToCloseTimeout }),
  };
};

const LOCAL: Record<PartnerPresetName, Partner> = {
  partnerHttp: localProxy('partnerHttp'),
  partnerHttpQuick: localProxy('partnerHttpQuick'),
};

/**
 * The page fetches of one execution of `sourceId`'s run: the source's preset (the default one for
 * resume state written before sources chose presets), local or on the queue and with the weight
 * its claim fixed. Call once per execution, before its first fetch.
 */
export function partnerFetches(sourceId: string, state: ResumeState): Partner {
  const preset = state.retryPolicy ?? 'partnerHttp';
  if (!patched(DOWNSTREAM_DISPATCH)) return UNKEYED[preset];
  // Only a claim of this build or later says so: older histories replay as they were recorded.
  if (state.localFetch === true) return LOCAL[preset];
  return partnerProxy(preset, {
    ...(state.partnerQueue === undefined ? {} : { taskQueue: state.partnerQueue }),
    priority: { fairnessKey: sourceId, fairnessWeight: state.partnerWeight ?? 1 },
  });
}
