/**
 * What a schedule does when a run is still open at its next time (Temporal's overlap policies,
 * lower case): a module of its own, without the SDK, so the CLI's help and argument parsing can use it.
 */
export const OVERLAP_POLICIES = [
  'skip',
  'buffer_one',
  'buffer_all',
  'cancel_other',
  'terminate_other',
  'allow_all',
] as const;
