/** Defaults of a dead-letter replay, apart from client/dead-letters/replay.ts so the CLI's help can show them cheaply. */

/** Letters a replay takes when `--max` is not given. */
export const DEFAULT_REPLAY_MAX = 1000;
