/**
 * Sources for operators (R11 "pause consumption", "fix the input"): reading `source` rows, adding,
 * pausing, resuming, correcting and removing one, and applying a sources file. Every change is recorded in `audit_entry` (who,
 * when, why) in the same transaction as the change it made. One module per concept under
 * client/sources/; this one is what the rest of the project imports.
 */
export type { Source } from '../../prisma/generated/client.ts';
export { SOURCE_TARGET, removedText } from './common.ts';
export { getSource, listSources, pauseText, scheduleSummary, type SourceDetail } from './read.ts';
export {
  pauseSource,
  resumeSource,
  type PausedSource,
  type PauseOptions,
  type ResumedSource,
  type ResumeOptions,
} from './pause.ts';
export {
  FIELD_OPTIONS,
  MAX_NAME_LENGTH,
  MAX_SUBMIT_PROCESSING_MS,
  type SourceChanges,
  type SourceField,
} from './fields.ts';
export {
  updateSource,
  type SourceUpdate,
  type UpdateContext,
  type UpdatedSource,
  type UpdateOptions,
} from './update.ts';
export { addSource, type AddedSource, type AddOptions, type NewSource } from './add.ts';
export { removeSource, type RemovedSource, type RemoveOptions } from './remove.ts';
export {
  applySources,
  applySourcesFile,
  type ApplyContext,
  type ApplyOptions,
  type ApplyReport,
} from './apply.ts';
export {
  fileProblemsError,
  parseSourcesFile,
  readSourcesFile,
  type DesiredSource,
  type SourcesFile,
} from './file.ts';
export { sourcesJsonSchema } from './file-schema.ts';
export { getWatermark, setSourceWatermark, type SourceWatermark } from './watermark.ts';
export type { PlanAction, PlannedChange } from './plan.ts';
