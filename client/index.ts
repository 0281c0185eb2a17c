/**
 * The application client API of durable-fetch: what an application calls to start, observe and
 * cancel runs, and to operate sources, schedules, dead letters and compensations. No process code.
 */
export { startFetch, prepareFetch, launchFetch, SEARCH_KEYS } from './start-fetch.ts';
export type { DurableFetchContext, PreparedFetch, StartFetchRequest, StartedFetch } from './start-fetch.ts';
export { enqueueFetch, getEnqueuedFetch, START_WORKFLOW_TOPIC } from './enqueue-fetch.ts';
export type { EnqueuedFetch, EnqueuedFetchState, EnqueueOptions } from './enqueue-fetch.ts';
export { cancelRun, getRun, listRuns } from './runs.ts';
export {
  countNeedsManual,
  getCompensation,
  listCompensations,
  resolveCompensation,
  retryCompensation,
} from './compensations/index.ts';
export type {
  Compensation,
  CompensationDetail,
  ListCompensationsFilter,
  ResolveOptions,
  Resolved,
  RetriedCompensation,
  RetryOptions,
} from './compensations/index.ts';
export { reconcileRuns, MISMATCH_CODES, NOTE_CODES } from './reconcile/index.ts';
export type {
  Finding,
  MismatchCode,
  NoteCode,
  ReconcileContext,
  ReconcileOptions,
  ReconcileReport,
  ReconcileSelector,
  RunReport,
} from './reconcile/index.ts';
export {
  addSource,
  applySources,
  applySourcesFile,
  getSource,
  listSources,
  parseSourcesFile,
  pauseSource,
  readSourcesFile,
  removeSource,
  resumeSource,
  SOURCE_TARGET,
  sourcesJsonSchema,
  updateSource,
} from './sources/index.ts';
export type {
  AddedSource,
  AddOptions,
  ApplyContext,
  ApplyOptions,
  ApplyReport,
  NewSource,
  PausedSource,
  PauseOptions,
  RemovedSource,
  RemoveOptions,
  ResumedSource,
  ResumeOptions,
  Source,
  SourceChanges,
  SourceDetail,
  SourcesFile,
  UpdatedSource,
  UpdateOptions,
} from './sources/index.ts';
export { discardDeadLetter } from './dead-letters/discard.ts';
export type { DiscardDeadLetterOptions } from './dead-letters/discard.ts';
export { listDeadLetters } from './dead-letters/list.ts';
export type { ListDeadLettersFilter } from './dead-letters/list.ts';
export { parseOverrides } from './dead-letters/overrides.ts';
export type { RetryOverrides } from './dead-letters/overrides.ts';
export { retryDeadLetter } from './dead-letters/retry.ts';
export type { RetriedDeadLetter, RetryDeadLetterOptions } from './dead-letters/retry.ts';
export { getDeadLetter } from './dead-letters/show.ts';
export type { DeadLetterDetail } from './dead-letters/show.ts';
export { parseSince } from './dead-letters/since.ts';
export type { AttemptFailure, TimelineEntry } from './dead-letters/timeline.ts';
export type { DeadLetterView } from './dead-letters/view.ts';
export {
  controlReplay,
  DEFAULT_REPLAY_MAX,
  followReplay,
  previewReplay,
  replayState,
  startReplay,
} from './dead-letters/replay.ts';
export type {
  ReplayFilter,
  ReplayProgress,
  ReplayReport,
  ReplayRequest,
  ReplayState,
  ReplayTarget,
  StartedReplay,
} from './dead-letters/replay.ts';
export { findScheduleId, syncSchedules, scheduleIdFor, sourceScheduleSchema } from './schedules.ts';
export type { SourceSchedule, SyncChange } from './schedules.ts';
export type { FetchRun, ListRunsFilter, RunStatus } from './runs.ts';
export { workflowIdFor, idempotencyKeyFor, FETCH_RECORDS } from '../contract/business-key.ts';
export type { FetchRecordsResult } from '../contract/types.ts';
export { UserFacingError } from '../runtime/errors.ts';
// The engine's PrismaClient on the node-postgres adapter: what `DurableFetchContext.prisma` takes.
export { createPrisma } from '../db/client.ts';
export type { ClientOptions, PrismaClient } from '../db/client.ts';
export { ENGINE_SCHEMA } from '../contract/engine-schema.ts';
// The workflow a run is (its Web UI type) and the values of its FetchStatus search attribute (docs/runs.md).
export type { fetchRunWorkflow } from '../workflows/fetch-records.ts';
export type { FetchStatus } from '../workflows/outcome.ts';
