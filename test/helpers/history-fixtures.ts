/**
 * Recorded workflow histories (the replay gate: runs stay open across deploys, so new workflow
 * code must replay old histories; R9 "on deploy"): their file format, their folder, and the
 * fixtures that must be there, each with a check that it shows what it was recorded for.
 * scripts/record-histories.ts writes them; test/workflow-replay.test.ts replays them.
 *
 * Be very careful: a fixture is evidence of what workflow code that ran in production-like
 * conditions did. Never re-record one to make a change pass; add new fixtures instead.
 */
import type { HistoryEvent } from './history-files.ts';
import {
  activityTypes,
  all,
  childKeyed,
  childStarted,
  closedAs,
  completed,
  continued,
  confirmedLocally,
  fetchedLocally,
  fetchesOn,
  has,
  hasParent,
  is,
  localActivities,
  not,
  pagesFetched,
  patchedWith,
  retriedActivity,
  runsActivity,
  signalled,
  startedKeyed,
} from './history-checks.ts';

/**
 * A credential planted in the recording's source (by reference, as production does): no fixture
 * may contain it, in plain text or inside a payload.
 */
export const PLANTED_SECRET = 'tok-history-9c41e7d2';
export const PLANTED_SECRET_REF = 'DF_SECRET_HISTORY_PARTNER';

export interface ExpectedFixture {
  file: string;
  workflowType: string;
  /** What the history must show to be worth replaying (said in the failure message). */
  shows: string;
  check: (events: HistoryEvent[]) => boolean;
}

const FETCH = 'fetchRecordsWorkflow';
/** The run workflow's type since issue 37: the same function as {@link FETCH}. */
const RUN = 'fetchRunWorkflow';

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
  ...[1, 2].map((n) => ({
    file: `fetch-records-isolated-${n}.json`,
    workflowType: FETCH,
    shows: `execution ${n} of 2 of an isolated downstream's run (R8): its page fetched on the downstream's queue, keyed by the source with weight 2, ${n === 1 ? 'then continue-as-new' : 'from resume state, completed'}`,
    check: all(
      fetchesOn('hist-ds', 'hist-isolated', 2),
      has('MARKER_RECORDED'),
      n === 1 ? all(closedAs('CONTINUED_AS_NEW'), not(continued)) : all(completed, continued),
    ),
  })),
  {
    file: 'fetch-records-invalid-input-no-key.json',
    workflowType: FETCH,
    shows: 'a refused start under a workflow id that names no key: failed, no activity at all',
    check: all(closedAs('FAILED'), (ev) => activityTypes(ev).length === 0),
  },
  ...(
    [
      ['local-steps', 'claim, two pages stored and completed as local activities (4), completed', 4],
      ['local-submit', 'as local-steps, plus the pause check and the intent before submit and confirm', 6],
      ['local-pause', 'a wait while paused, its pause checks as local activities, completed', 5],
    ] as const
  ).map(([name, shows, steps]) => ({
    file: `fetch-records-${name}.json`,
    workflowType: FETCH,
    shows,
    check: all(completed, patchedWith('local-database-steps'), localActivities(steps)),
  })),
  ...[1, 2].map((n) => ({
    file: `fetch-records-local-fetch-${n}.json`,
    workflowType: FETCH,
    shows: `execution ${n} of 2 of a run of a local-fetch source: its page fetched as a local activity (no activity task), ${n === 1 ? 'retried after a 503, then continue-as-new' : 'from resume state, completed'}`,
    check: all(
      fetchedLocally(1, n === 1),
      not(pagesFetched(1)),
      n === 1 ? all(closedAs('CONTINUED_AS_NEW'), not(continued)) : all(completed, continued),
    ),
  })),
  {
    file: 'fetch-records-local-fetch-timer.json',
    workflowType: FETCH,
    shows:
      "a local-fetch source's run whose page the partner rate-limits for 12 s: the local fetch's retry waits on a durable timer (its marker's backoff), then its second attempt stores the page; completed",
    check: all(completed, fetchedLocally(2, true, true), not(pagesFetched(1))),
  },
  {
    file: 'fetch-run-local-confirm.json',
    workflowType: RUN,
    shows:
      "a local-fetch source's run with its downstream step: the submit an activity task, the confirm a local activity (patched) whose first attempt met a 503 and whose retry in the worker confirmed; completed",
    check: all(
      completed,
      patchedWith('downstream-confirm-local'),
      runsActivity('submitSummary'),
      confirmedLocally(true),
    ),
  },
  {
    file: 'fetch-run-cancel-after-success.json',
    workflowType: RUN,
    shows:
      'a cancel that lands while the run’s local confirm is held: the workflow task is refused, the execution replayed with the cancel first finds its row succeeded (patched) and completes',
    check: all(
      completed,
      has('WORKFLOW_EXECUTION_CANCEL_REQUESTED'),
      has('WORKFLOW_TASK_FAILED'),
      patchedWith('succeeded-row-decides'),
      runsActivity('finishRun'),
    ),
  },
  {
    file: 'fetch-run-dead-lettered-row-decides.json',
    workflowType: RUN,
    shows:
      'a run whose partner answers 404, its end recorded before its status is shown (patched): dead-lettered, failed',
    check: all(closedAs('FAILED'), patchedWith('succeeded-row-decides'), runsActivity('finishRun')),
  },
  {
    file: 'fetch-records-local-database-outage.json',
    workflowType: FETCH,
    shows:
      'a run whose claim met its database refusing connections: the claim step spent its attempts, the workflow waited 1–3 s (patched) and ran it again once the database answered; completed',
    check: all(
      completed,
      patchedWith('outlast-database-outage'),
      patchedWith('outlast-database-outage-briefly'),
    ),
  },
  {
    file: 'fetch-run-dead-lettered.json',
    workflowType: RUN,
    shows:
      'a run started as fetchRunWorkflow whose partner answers 404: FetchStatus dead_lettered (patched), dead-lettered, failed',
    check: all(closedAs('FAILED'), patchedWith('fetch-status-run-words'), runsActivity('finishRun')),
  },
  {
    file: 'scheduled-fetch-run.json',
    workflowType: 'scheduledFetchWorkflow',
    shows: 'a Schedule’s trigger starting its run as a fetchRunWorkflow child (patched), completed',
    check: all(completed, childStarted(RUN), patchedWith('generic-run-workflow-type')),
  },
  {
    file: 'scheduled-fetch-run-child.json',
    workflowType: RUN,
    shows: 'the fetchRunWorkflow run a Schedule’s trigger started, completed',
    check: all(completed, hasParent),
  },
  {
    file: 'fetch-run-reauthorization.json',
    workflowType: RUN,
    shows:
      'a page fetch refused for a credential that needs reauthorization, a wait (patched), the page fetched again once a new token was set, completed',
    check: all(
      completed,
      patchedWith('wait-for-reauthorization'),
      has('TIMER_FIRED'),
      (events) => events.filter(is('ACTIVITY_TASK_FAILED')).length >= 1,
    ),
  },
  {
    file: 'scheduled-fetch-status-at-start.json',
    workflowType: 'scheduledFetchWorkflow',
    shows: 'a Schedule’s trigger starting its child run showing FetchStatus running (patched), completed',
    check: all(completed, childStarted(RUN), patchedWith('run-status-running-at-start')),
  },
  ...(
    [
      [
        'scheduled-fetch-keyed',
        'fetch-run-scheduled-keyed',
        'scheduledFetchWorkflow',
        'a Schedule’s trigger',
        'hist-child-keyed',
      ],
      [
        'dlq-replay-keyed',
        'fetch-run-replayed-keyed',
        'replayDeadLettersWorkflow',
        'a dead-letter replay',
        'hist-dlq-keyed',
      ],
    ] as const
  ).flatMap(([parent, child, workflowType, who, key]) => [
    {
      file: `${parent}.json`,
      workflowType,
      shows: `${who} starting its run with the source as fairness key (patched), completed`,
      check: all(completed, patchedWith('child-run-fairness-key'), childKeyed(key)),
    },
    {
      file: `${child}.json`,
      workflowType: RUN,
      shows: `the run ${who} started, keyed by its source, completed`,
      check: all(completed, hasParent, startedKeyed(key)),
    },
  ]),
  {
    file: 'fetch-run-status-at-start.json',
    workflowType: RUN,
    shows:
      'a run started showing FetchStatus running: no upsert after its claim (patched), one at its end, completed',
    check: all(
      completed,
      hasParent,
      patchedWith('status-upsert-only-when-changed'),
      (events) => statusUpserts(events) === 1,
    ),
  },
  {
    file: 'fetch-run-deadline-far.json',
    workflowType: RUN,
    shows:
      'a run of the default 24 h maximum run time: its deadline timer never started (patched), completed',
    check: all(completed, patchedWith('run-deadline-armed-when-near'), not(has('TIMER_STARTED'))),
  },
  {
    file: 'fetch-run-deadline-near.json',
    workflowType: RUN,
    shows:
      'a run of a 5 min maximum run time: its deadline timer started after the first page fetch (patched), cancelled at the end; completed',
    check: all(
      completed,
      patchedWith('run-deadline-armed-when-near'),
      (events) => events.findIndex(is('TIMER_STARTED')) > events.findIndex(is('ACTIVITY_TASK_SCHEDULED')),
      has('ACTIVITY_TASK_SCHEDULED'),
      has('TIMER_CANCELED'),
    ),
  },
];

/** The run's own upserts of `FetchStatus` (the SDK's `TemporalChangeVersion` ones aside). */
function statusUpserts(events: HistoryEvent[]): number {
  return events.filter(is('UPSERT_WORKFLOW_SEARCH_ATTRIBUTES')).filter((e) => {
    const a = e.upsertWorkflowSearchAttributesEventAttributes as
      { searchAttributes?: { indexedFields?: Record<string, unknown> } } | undefined;
    return a?.searchAttributes?.indexedFields?.FetchStatus !== undefined;
  }).length;
}

export {
  HISTORIES_DIR,
  type HistoryEvent,
  type HistoryFixture,
  readFixtures,
  searchableTexts,
} from './history-files.ts';
