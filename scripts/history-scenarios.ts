/**
 * The scenarios scripts/record-histories.ts runs for real (worker, database, demo partner) to
 * record workflow histories for the replay gate. Each returns the executions to record, by
 * fixture name; test/helpers/history-fixtures.ts lists what each fixture must show.
 * Small on purpose (few pages of 10 records): the fixtures live in the repository.
 */
import type { Scenario } from './history-scenario-steps.ts';
import {
  cancelBeforeContinue,
  deadlineConfirm,
  deadlineFetch,
  withinDeadline,
} from './history-scenarios-deadline.ts';
import {
  cancelled,
  continueAsNew,
  happy,
  invalidInput,
  pauseResume,
  resetEnded,
  retries,
  submit,
} from './history-scenarios-fetch.ts';
import { reauthorization } from './history-scenarios-credentials.ts';
import { deadlineWhenNear, statusAtStart } from './history-scenarios-actions.ts';
import { isolated } from './history-scenarios-downstream.ts';
import { genericNames } from './history-scenarios-generic.ts';
import {
  localFetch,
  localDatabaseOutage,
  localFetchTimer,
  localConfirm,
  succeededRowDecides,
  localPause,
  localSteps,
  localSubmit,
} from './history-scenarios-local.ts';
import {
  compensationCancelled,
  compensationFailed,
  deadLetterReplay,
  childFairness,
  scheduled,
} from './history-scenarios-linked.ts';

export type { Execution, Scenario, ScenarioContext } from './history-scenario-steps.ts';

/** Records each source's partner serves (sources are `hist-<scenario>`). */
export const RECORDS: Record<string, number> = {
  'hist-continue': 50,
  'hist-happy': 25,
  'hist-pause': 30,
  'hist-local-pause': 30,
};
export const DEFAULT_RECORDS = 15;

/**
 * Every scenario, in the order record-histories runs them (one after another, on one worker and
 * one database) and lists them in --help. Their `name`s are what --only accepts.
 */
export const SCENARIOS: readonly Scenario[] = [
  happy,
  submit,
  retries,
  pauseResume,
  continueAsNew,
  compensationFailed,
  compensationCancelled,
  deadLetterReplay,
  childFairness,
  scheduled,
  cancelled,
  resetEnded,
  withinDeadline,
  deadlineFetch,
  deadlineConfirm,
  cancelBeforeContinue,
  invalidInput,
  isolated,
  localSteps,
  localSubmit,
  localPause,
  localFetch,
  localFetchTimer,
  localConfirm,
  succeededRowDecides,
  localDatabaseOutage,
  genericNames,
  reauthorization,
  statusAtStart,
  deadlineWhenNear,
];
