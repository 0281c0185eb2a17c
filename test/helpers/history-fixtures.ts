/**
 * Recorded workflow histories (the replay gate: runs stay open across deploys, so new workflow
 * code must replay old histories; R9 "on deploy"): their file format, their folder, and the
 * fixtures that must be there, each with a check that it shows what it was recorded for.
 * scripts/record-histories.ts writes them; test/workflow-replay.test.ts replays them.
 *
 * Be very careful: a fixture is evidence of what workflow code that ran in production-like
 * conditions did. Never re-record one to make a change pass; add new fixtures instead.
 */
import path from 'node:path';
import { PROJECT_ROOT } from '../../worker/config.ts';

export const HISTORIES_DIR = path.join(PROJECT_ROOT, 'test', 'histories');

/**
 * A credential planted in the recording's source (by reference, as production does): no fixture
 * may contain it, in plain text or inside a payload.
 */
export const PLANTED_SECRET = 'tok-history-9c41e7d2';
export const PLANTED_SECRET_REF = 'DF_SECRET_HISTORY_PARTNER';

/** One fixture file: one workflow execution. Histories carry no workflow id: it is kept beside. */
export interface HistoryFixture {
  workflowId: string;
  runId: string;
  workflowType: string;
  /** Temporal's JSON history, as `historyToJSON` writes it (and the CLI and Web UI download). */
  history: { events: HistoryEvent[] };
}

/** The parts of a proto-JSON history event the checks read. */
export interface HistoryEvent {
  eventType: string;
  [attributes: string]: unknown;
}

const is = (type: string) => (e: HistoryEvent) => e.eventType === `EVENT_TYPE_${type}`;
const attrs = (e: HistoryEvent, key: string) => (e[key] ?? {}) as Record<string, unknown>;
const nameOf = (value: unknown) => (value as { name?: string } | undefined)?.name;

/** Activity types the history scheduled, once each in order of first appearance. */
export function activityTypes(events: HistoryEvent[]): string[] {
  const types = events
    .filter(is('ACTIVITY_TASK_SCHEDULED'))
    .map((e) => nameOf(attrs(e, 'activityTaskScheduledEventAttributes').activityType) ?? '?');
  return [...new Set(types)];
}

const closedAs = (status: string) => (events: HistoryEvent[]) =>
  events.some(is(`WORKFLOW_EXECUTION_${status}`));
const completed = closedAs('COMPLETED');
const childStarted = (type: string) => (events: HistoryEvent[]) =>
  events
    .filter(is('START_CHILD_WORKFLOW_EXECUTION_INITIATED'))
    .some(
      (e) => nameOf(attrs(e, 'startChildWorkflowExecutionInitiatedEventAttributes').workflowType) === type,
    );
const runsActivity = (type: string) => (events: HistoryEvent[]) => activityTypes(events).includes(type);
const retriedActivity = (events: HistoryEvent[]) =>
  events
    .filter(is('ACTIVITY_TASK_STARTED'))
    .some((e) => Number(attrs(e, 'activityTaskStartedEventAttributes').attempt ?? 1) > 1);
const signalled = (name: string) => (events: HistoryEvent[]) =>
  events.filter(is('WORKFLOW_EXECUTION_SIGNALED')).some((e) => {
    return attrs(e, 'workflowExecutionSignaledEventAttributes').signalName === name;
  });
const started = (events: HistoryEvent[]) =>
  attrs(
    events.find(is('WORKFLOW_EXECUTION_STARTED')) ?? { eventType: '' },
    'workflowExecutionStartedEventAttributes',
  );
/** Started by continue-as-new (carries the previous execution's run id). */
const continued = (events: HistoryEvent[]) => started(events).continuedExecutionRunId !== undefined;
const hasParent = (events: HistoryEvent[]) => started(events).parentWorkflowExecution !== undefined;
const pagesFetched = (n: number) => (events: HistoryEvent[]) =>
  events
    .filter(is('ACTIVITY_TASK_SCHEDULED'))
    .filter((e) => nameOf(attrs(e, 'activityTaskScheduledEventAttributes').activityType) === 'fetchPage')
    .length >= n;
const all =
  (...checks: ((events: HistoryEvent[]) => boolean)[]) =>
  (events: HistoryEvent[]) =>
    checks.every((check) => check(events));
const has = (type: string) => (events: HistoryEvent[]) => events.some(is(type));
const not = (check: (events: HistoryEvent[]) => boolean) => (events: HistoryEvent[]) => !check(events);

export interface ExpectedFixture {
  file: string;
  workflowType: string;
  /** What the history must show to be worth replaying (said in the failure message). */
  shows: string;
  check: (events: HistoryEvent[]) => boolean;
}

const FETCH = 'fetchRecordsWorkflow';

/** Every fixture the gate needs. Add to it; never drop one that has shipped. */
export const EXPECTED_FIXTURES: readonly ExpectedFixture[] = [
  {
    file: 'fetch-records-happy.json',
    workflowType: FETCH,
    shows: 'several pages, no downstream step, completed',
    check: all(completed, pagesFetched(3), not(runsActivity('submitSummary'))),
  },
  {
    file: 'fetch-records-submit.json',
    workflowType: FETCH,
    shows: 'the downstream submit and confirm, completed',
    check: all(completed, runsActivity('submitSummary'), runsActivity('confirmSubmission')),
  },
  {
    file: 'fetch-records-retries.json',
    workflowType: FETCH,
    shows: 'fetchPage retried after partner 503 and 429 answers, completed',
    check: all(completed, retriedActivity),
  },
  {
    file: 'fetch-records-pause-resume.json',
    workflowType: FETCH,
    shows: 'a wait while the source was paused, the sourceResumed signal, completed',
    check: all(completed, signalled('sourceResumed'), runsActivity('checkSourcePause')),
  },
  ...[1, 2].map((n) => ({
    file: `fetch-records-continue-as-new-${n}.json`,
    workflowType: FETCH,
    shows: `execution ${n} of 3: two pages, then continue-as-new`,
    check: all(closedAs('CONTINUED_AS_NEW'), n === 1 ? not(continued) : continued),
  })),
  {
    file: 'fetch-records-continue-as-new-3.json',
    workflowType: FETCH,
    shows: 'the last execution of a continued run: resume state, last page, completed',
    check: all(completed, continued, not(runsActivity('claimRun'))),
  },
  {
    file: 'compensation-failed-fetch-records.json',
    workflowType: FETCH,
    shows: 'a confirm that failed for good after the submit: failed, compensation started',
    check: all(closedAs('FAILED'), childStarted('compensateRunWorkflow')),
  },
  {
    file: 'compensation-failed-compensate-run.json',
    workflowType: 'compensateRunWorkflow',
    shows: 'the submission voided, completed',
    check: all(completed, runsActivity('compensateDownstream')),
  },
  {
    file: 'compensation-cancelled-fetch-records.json',
    workflowType: FETCH,
    shows: 'a run cancelled while its confirm was in flight: cancelled, compensation started',
    check: all(closedAs('CANCELED'), childStarted('compensateRunWorkflow')),
  },
  {
    file: 'compensation-cancelled-compensate-run.json',
    workflowType: 'compensateRunWorkflow',
    shows: 'the cancelled run’s submission voided, completed',
    check: all(completed, runsActivity('compensateDownstream')),
  },
  {
    file: 'dlq-fetch-records-dead-lettered.json',
    workflowType: FETCH,
    shows: 'a run that failed for good on a 422 (dead-lettered)',
    check: all(closedAs('FAILED'), runsActivity('finishRun')),
  },
  {
    file: 'dlq-replay-dead-letters.json',
    workflowType: 'replayDeadLettersWorkflow',
    shows: 'a rate-limited replay of two dead letters (a timer between the starts), completed',
    check: all(completed, childStarted(FETCH), (ev) => ev.some(is('TIMER_STARTED'))),
  },
  {
    file: 'dlq-fetch-records-replayed.json',
    workflowType: FETCH,
    shows: 'the replayed run, started by the replay, completed',
    check: all(completed, hasParent),
  },
  {
    file: 'scheduled-fetch.json',
    workflowType: 'scheduledFetchWorkflow',
    shows: 'a Schedule’s trigger running the business-key run as a child, completed',
    check: all(completed, childStarted(FETCH)),
  },
  {
    file: 'scheduled-fetch-records.json',
    workflowType: FETCH,
    shows: 'the run a Schedule’s trigger started, completed',
    check: all(completed, hasParent),
  },
  {
    file: 'fetch-records-cancelled.json',
    workflowType: FETCH,
    shows: 'a run cancelled while a page was in flight',
    check: all(closedAs('CANCELED'), runsActivity('finishRun')),
  },
  {
    file: 'fetch-records-reset-dead-lettered.json',
    workflowType: FETCH,
    shows:
      'a dead-lettered run reset to the first task of its last continued execution: its run ended, claimed anew, last page stored, completed',
    check: all(completed, continued, runsActivity('claimRun'), runsActivity('storePage')),
  },
  {
    file: 'fetch-records-reset-succeeded.json',
    workflowType: FETCH,
    shows:
      'a succeeded run reset to the first task of its last continued execution: its run ended, claimed anew, the stored success reported',
    check: all(completed, continued, runsActivity('claimRun'), not(runsActivity('storePage'))),
  },
  {
    file: 'fetch-records-within-deadline.json',
    workflowType: FETCH,
    shows: 'a run with a maximum run time (R9): its deadline timer armed, then cancelled; completed',
    check: all(completed, has('TIMER_STARTED'), has('TIMER_CANCELED'), has('MARKER_RECORDED')),
  },
  ...(['CONTINUED_AS_NEW', 'FAILED'] as const).map((end, i) => ({
    file: `fetch-records-deadline-${i + 1}.json`,
    workflowType: FETCH,
    shows: `execution ${i + 1} of a run past its deadline: ${end}${i === 0 ? '' : ' in a held fetch'}`,
    check: all(closedAs(end), has(i === 0 ? 'TIMER_CANCELED' : 'TIMER_FIRED')),
  })),
  {
    file: 'fetch-records-deadline-confirm.json',
    workflowType: FETCH,
    shows: 'the deadline firing while the confirm was held: failed, compensation started',
    check: all(closedAs('FAILED'), has('TIMER_FIRED'), childStarted('compensateRunWorkflow')),
  },
  {
    file: 'fetch-records-cancel-before-continue.json',
    workflowType: FETCH,
    shows: 'a cancel in the workflow task that would continue as new: cancelled, not continued',
    check: all(closedAs('CANCELED'), has('WORKFLOW_EXECUTION_CANCEL_REQUESTED'), runsActivity('finishRun')),
  },
  {
    file: 'fetch-records-invalid-input.json',
    workflowType: FETCH,
    shows: 'a start with an input the workflow refuses: recorded against its key, failed, no claim',
    check: all(closedAs('FAILED'), runsActivity('recordInvalidStart'), not(runsActivity('claimRun'))),
  },
  {
    file: 'fetch-records-invalid-input-no-key.json',
    workflowType: FETCH,
    shows: 'a refused start under a workflow id that names no key: failed, no activity at all',
    check: all(closedAs('FAILED'), (ev) => activityTypes(ev).length === 0),
  },
];

export { readFixtures, searchableTexts } from './history-files.ts';
