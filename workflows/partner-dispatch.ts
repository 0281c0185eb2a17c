/**
 * Where a run's partner page fetches are dispatched (R8). A source whose downstream is isolated
 * fetches on that downstream's task queue (its own worker slots and server-side rate limits, so a
 * slow or failing partner holds no slot of the others); every other source on the workflow's own.
 * Each fetch carries the source as its fairness key, with its weight: Temporal then dispatches the
 * tasks of the sources sharing a queue in turn, so one source's backlog does not starve the rest.
 */
import { type ActivityOptions, patched, proxyActivities } from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { type PartnerPresetName, RETRY_PRESETS } from './retry-presets.ts';
import type { ResumeState } from './types.ts';

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
 * The page fetches of one execution of `sourceId`'s run: the source's preset (the default one for
 * resume state written before sources chose presets), on the queue and with the weight its claim
 * fixed. Call once per execution, before its first fetch.
 */
export function partnerFetches(sourceId: string, state: ResumeState): Partner {
  const preset = state.retryPolicy ?? 'partnerHttp';
  if (!patched(DOWNSTREAM_DISPATCH)) return UNKEYED[preset];
  return partnerProxy(preset, {
    ...(state.partnerQueue === undefined ? {} : { taskQueue: state.partnerQueue }),
    priority: { fairnessKey: sourceId, fairnessWeight: state.partnerWeight ?? 1 },
  });
}
