/**
 * The check of a fetch-records run's workflow input at the workflow boundary (R2 "validated
 * payload", R7 "bad input stops at once"). The client checks a start before it makes it, but the
 * Web UI's "Start Workflow" and `temporal workflow start` hand the workflow whatever JSON they
 * were given: wrong types, huge strings, NUL bytes, a forged resume state, a workflow id of another
 * key. Pure and deterministic (workflow code runs it), never throws, and its messages name fields
 * and rules, never a value (a value may be huge, or a secret pasted into the wrong field).
 */
import {
  isActionName,
  isBusinessDate,
  isCorrelationId,
  isJobType,
  isSourceId,
} from '../contract/business-key.ts';
import { type BusinessKey, parseWorkflowId, workflowIdFor } from '../contract/business-key.ts';
import {
  isIsoInstant,
  isPartnerQueue,
  isUuid,
  MAX_CURSOR_LENGTH,
  MAX_FAIRNESS_WEIGHT,
  MAX_PAGE_SIZE,
  MAX_PAGES_PER_EXECUTION,
} from '../contract/input-limits.ts';
import { PARTNER_PRESETS } from '../contract/retry-presets.ts';
import { type FetchRecordsInput, REQUESTED_BY, type ResumeState } from '../contract/types.ts';

/** What the workflow knows of its own execution (from `workflowInfo()`). */
export interface ExecutionFacts {
  workflowId: string;
  /** Set on an execution started by continue-as-new: only those may carry `resume`. */
  continuedFromExecutionRunId?: string | undefined;
}

/** One refused field: its path (`pageSize`, `resume.cursor`) and the rule it breaks. */
export interface InputProblem {
  field: string;
  rule: string;
}

export type InputCheck =
  | { ok: true }
  | {
      ok: false;
      problems: InputProblem[];
      /** A message naming the fields and rules (no values), bounded. */
      message: string;
      /**
       * The business key the workflow id names exactly (`fetch/<job>/<source>/<date>`): the key
       * the refused start may be recorded against. Absent when the id names none.
       */
      key?: BusinessKey;
    };

/** A field's rule: undefined when `value` keeps it, else the rule in words. */
type Rule = (value: unknown) => string | undefined;

const text =
  (test: (v: string) => boolean, rule: string): Rule =>
  (v) =>
    typeof v === 'string' && test(v) ? undefined : rule;
const integer =
  (min: number, max: number): Rule =>
  (v) =>
    typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max
      ? undefined
      : `must be an integer ${min}..${max === Number.MAX_SAFE_INTEGER ? 'max' : max}`;
const oneOf =
  (values: readonly string[]): Rule =>
  (v) =>
    typeof v === 'string' && values.includes(v) ? undefined : `must be one of ${values.join(', ')}`;
const weight: Rule = (v) =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= MAX_FAIRNESS_WEIGHT
    ? undefined
    : `must be a number above 0, at most ${MAX_FAIRNESS_WEIGHT}`;
const boolean: Rule = (v) => (typeof v === 'boolean' ? undefined : 'must be true or false');
const optional =
  (rule: Rule): Rule =>
  (v) =>
    v === undefined ? undefined : rule(v);

const jobType = text(isJobType, "must be a job type: a-z, 0-9 and '-', at most 41");
const uuid = text(isUuid, 'must be a UUID');
const counter = integer(0, Number.MAX_SAFE_INTEGER);
const cursor: Rule = (v) =>
  v === null || (typeof v === 'string' && v.length >= 1 && v.length <= MAX_CURSOR_LENGTH)
    ? undefined
    : `must be null or a string of 1..${MAX_CURSOR_LENGTH} characters`;

/**
 * The rules of every resume field. Keyed by the type's own keys: a field added to ResumeState
 * does not compile until it has a rule here.
 */
const RESUME_RULES: { [K in keyof Required<ResumeState>]: Rule } = {
  jobType: optional(jobType),
  fetchRunId: uuid,
  leaseToken: uuid,
  cursor,
  pagesStored: counter,
  recordsStored: counter,
  pageSize: integer(1, MAX_PAGE_SIZE),
  // Resume state written before sources chose presets has none (the default preset then).
  retryPolicy: optional(oneOf(PARTNER_PRESETS)),
  round: optional(integer(1, Number.MAX_SAFE_INTEGER)),
  submitSummary: optional(boolean),
  downstreamAction: optional(text(isActionName, "must be an action name: a-z, 0-9, '-' and '_', at most 41")),
  waitingForResume: optional(boolean),
  // The run's deadline, fixed at its claim (absent from state written before runs had one).
  deadlineAt: optional(text(isIsoInstant, 'must be an ISO 8601 instant with an offset')),
  // Where the run's page fetches go, fixed at its claim (absent from state written before).
  partnerQueue: optional(
    text(isPartnerQueue, 'must be a downstream task queue: <task queue>-ds-<downstream>'),
  ),
  partnerWeight: optional(weight),
  // How the run's page fetches run, fixed at its claim (absent from state written before).
  localFetch: optional(boolean),
};

/** The rules of every input field but `resume` (checked by {@link resumeProblems}). */
const INPUT_RULES: { [K in Exclude<keyof Required<FetchRecordsInput>, 'resume'>]: Rule } = {
  jobType: optional(jobType),
  sourceId: text(isSourceId, "must be a source id: a-z, 0-9, '-' and '_', at most 63"),
  businessDate: text(isBusinessDate, 'must be a calendar date written YYYY-MM-DD'),
  correlationId: text(isCorrelationId, 'must be 1..128 characters of A-Z a-z 0-9 . _ : -'),
  requestedBy: oneOf(REQUESTED_BY),
  scheduledAt: optional(text(isIsoInstant, 'must be an ISO 8601 instant with an offset')),
  pageSize: optional(integer(1, MAX_PAGE_SIZE)),
  pagesPerExecution: optional(integer(1, MAX_PAGES_PER_EXECUTION)),
};

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A field name as a message may show it: unknown names may be anything, so only short plain ones. */
const shown = (name: string) => (/^[A-Za-z0-9_]{1,40}$/.test(name) ? name : '(a field with an unusual name)');

function fieldProblems(
  value: Record<string, unknown>,
  rules: Record<string, Rule>,
  prefix: string,
): InputProblem[] {
  const problems: InputProblem[] = [];
  for (const [name, rule] of Object.entries(rules)) {
    const broken = rule(value[name]);
    if (broken !== undefined) problems.push({ field: prefix + name, rule: broken });
  }
  for (const name of Object.keys(value)) {
    if (!Object.hasOwn(rules, name) && !(prefix === '' && name === 'resume'))
      problems.push({ field: prefix + shown(name), rule: 'is not a field of this input' });
  }
  return problems;
}

function resumeProblems(input: Record<string, unknown>, facts: ExecutionFacts): InputProblem[] {
  const resume = input.resume;
  if (resume === undefined) return [];
  // Resume state carries a claim (run id, lease token): only continue-as-new may hand one on.
  if (facts.continuedFromExecutionRunId === undefined)
    return [{ field: 'resume', rule: 'is set by continue-as-new only: a start cannot carry it' }];
  if (!isRecord(resume)) return [{ field: 'resume', rule: 'must be an object' }];
  const problems = fieldProblems(resume, RESUME_RULES, 'resume.');
  const named = input.jobType;
  if (typeof named === 'string' && typeof resume.jobType === 'string' && resume.jobType !== named)
    problems.push({ field: 'resume.jobType', rule: 'must be the job type of the input' });
  return problems;
}

/** Tail Temporal Schedules add to the workflow ids of their actions (`-<RFC 3339 time>`). */
const SCHEDULE_SUFFIX_RE = /^-\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/**
 * The workflow id must name the input's business key: `fetch/<job>/<source>/<date>`, or that with
 * a Schedule's time suffix (a Schedule whose action starts this workflow itself). An input without
 * a job type takes the id's (inputs written before jobs were plug-ins name none).
 */
function workflowIdProblems(input: Record<string, unknown>, workflowId: string): InputProblem[] {
  const { sourceId, businessDate } = input;
  if (typeof sourceId !== 'string' || !isSourceId(sourceId)) return [];
  if (typeof businessDate !== 'string' || !isBusinessDate(businessDate)) return [];
  // A job type the input names wrongly is reported by its own rule.
  if (input.jobType !== undefined && (typeof input.jobType !== 'string' || !isJobType(input.jobType)))
    return [];
  const jobType = input.jobType ?? workflowId.split('/')[1] ?? '';
  const expected = workflowIdFor({ jobType, sourceId, businessDate });
  const tail = workflowId.startsWith(expected) ? workflowId.slice(expected.length) : undefined;
  if (isJobType(jobType) && (tail === '' || (tail !== undefined && SCHEDULE_SUFFIX_RE.test(tail)))) return [];
  return [{ field: 'workflowId', rule: 'must be fetch/<jobType>/<sourceId>/<businessDate> of the input' }];
}

/** How many problems a message lists (the rest are counted). */
const LISTED = 3;

/**
 * Checks a fetch-records input against every rule the client enforces, plus what only a start
 * that bypassed the client can break (the workflow id, a forged resume state, unknown fields).
 * Pure, deterministic, never throws.
 */
export function checkFetchInput(input: unknown, facts: ExecutionFacts): InputCheck {
  const parsed = parseWorkflowId(facts.workflowId);
  const key = parsed === undefined ? {} : { key: parsed };
  const problems: InputProblem[] = isRecord(input)
    ? [
        ...fieldProblems(input, INPUT_RULES, ''),
        ...resumeProblems(input, facts),
        ...workflowIdProblems(input, facts.workflowId),
      ]
    : [{ field: '(input)', rule: 'must be a JSON object' }];
  if (problems.length === 0) return { ok: true };
  const listed = problems.slice(0, LISTED).map((p) => `${p.field} ${p.rule}`);
  const more = problems.length > LISTED ? ` (and ${problems.length - LISTED} more)` : '';
  return { ok: false, problems, message: `invalid workflow input: ${listed.join('; ')}${more}`, ...key };
}
