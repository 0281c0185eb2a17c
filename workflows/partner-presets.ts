/**
 * The retry presets a source may name for its partner calls: apart from retry-presets.ts (which
 * needs the workflow SDK) so that the CLI's help can list them without loading it.
 */
import type { RetryPresetName } from './retry-presets.ts';

/** The presets a source may name for its partner calls. */
export const PARTNER_PRESETS = [
  'partnerHttp',
  'partnerHttpQuick',
] as const satisfies readonly RetryPresetName[];
export type PartnerPresetName = (typeof PARTNER_PRESETS)[number];

/**
 * The longest wait before a local page fetch's retry that the worker sleeps through inside the
 * workflow task; a longer one is a durable timer (activities/local-stop.ts relies on it).
 */
export const LOCAL_FETCH_RETRY_THRESHOLD_MS = 10_000;

export function isPartnerPreset(name: string): name is PartnerPresetName {
  return (PARTNER_PRESETS as readonly string[]).includes(name);
}
