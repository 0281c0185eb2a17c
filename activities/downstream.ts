/**
 * The compensation ledger's activities (issue #6, R4): a non-idempotent downstream call is
 * recorded before it is made (intent) and after (outcome); an unknown outcome is settled by a
 * lookup at the partner, never by calling again blindly; an effect the run must not keep is undone
 * (voided) and recorded. Rows live in `downstream_action`; states are explained in docs/runbook.md.
 *
 * Be very careful: every state change is a conditional UPDATE on the state it expects, so a
 * repeated or late attempt (a worker that died and came back) cannot move a row backwards.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { DownstreamAction, Source } from '../prisma/generated/client.ts';
import { FETCH_RECORDS, idempotencyKeyFor } from '../workflows/business-key.ts';
import type { ErrorType } from '../workflows/error-types.ts';
import type {
  CompensateRunInput,
  ConfirmSubmissionInput,
  DownstreamActionView,
  DownstreamStateName,
  MarkNeedsManualInput,
  ReconcileActionInput,
  ReconcileActionResult,
  RecordIntentInput,
  SubmitSummaryInput,
} from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';
import { crashPoint } from './crash-points.ts';
import { classify, failure } from './errors.ts';
import { heartbeatEvery } from './heartbeat.ts';
import { observed } from './observe.ts';
import { leaseLost } from './lease.ts';
import { bearerToken, loadEnabledSource, loadSource } from './sources.ts';
import {
  actOnSubmission,
  createSubmission,
  findSubmissions,
  type Submission,
  type SubmissionsTarget,
} from './submissions-client.ts';

/** Longest error message kept on a row: enough to read, never a dumped body. */
const MAX_MESSAGE = 500;

/**
 * Answers that prove the partner did nothing: it refused the request as such. Anything else that
 * is not a 2xx (a timeout, a reset, a 5xx, a 429, a 2xx we cannot read) may hide an effect.
 */
const REJECTIONS: ReadonlySet<string> = new Set<ErrorType>(['InvalidInput', 'PermissionDenied', 'NotFound']);

/** States in which an action may still hold an effect the ledger has not settled. */
export const UNSETTLED_STATES: readonly DownstreamStateName[] = [
  'attempting',
  'unknown',
  'confirmed',
  'compensating',
  'needs_manual',
];

/** States the compensation workflow works on (`needs_manual` waits for an operator). */
const COMPENSABLE_STATES: readonly DownstreamStateName[] = [
  'attempting',
  'unknown',
  'confirmed',
  'compensating',
];

function view(row: DownstreamAction): DownstreamActionView {
  return { actionId: row.id, state: row.state, attempts: row.attempts, partnerId: row.partnerId };
}

/** The failure's type and a short message, for the row's `last_error*` columns. */
function errorFields(err: unknown, what: string): { type: string; message: string } {
  const f = classify(err, what);
  if (f instanceof ApplicationFailure)
    return { type: f.type ?? 'Internal', message: f.message.slice(0, MAX_MESSAGE) };
  return { type: 'Cancelled', message: `${what}: cancelled` };
}

function outcomeUnknown(message: string): ApplicationFailure {
  return failure('OutcomeUnknown', 'OUTCOME_UNKNOWN', message);
}

export function createDownstreamActivities(deps: ActivityDeps) {
  const { prisma } = deps;

  async function loadAction(
    actionId: string,
  ): Promise<DownstreamAction & { run: { sourceId: string; status: string } }> {
    const row = await prisma.downstreamAction.findUnique({
      where: { id: actionId },
      include: { run: { select: { sourceId: true, status: true } } },
    });
    if (!row) throw failure('NotFound', 'ACTION_NOT_FOUND', `downstream action ${actionId} does not exist`);
    return row;
  }

  function target(source: Source, signal: AbortSignal): SubmissionsTarget {
    const token = bearerToken(source, deps.secret);
    return {
      baseUrl: source.baseUrl,
      sourceId: source.id,
      signal,
      ...(token === undefined ? {} : { token }),
    };
  }

  /** Records the last failure on the row (best effort: the failure itself is what matters). */
  async function noteError(actionId: string, err: unknown, what: string): Promise<void> {
    const { type, message } = errorFields(err, what);
    await prisma.$executeRaw`
      UPDATE downstream_action SET last_error_type = ${type}, last_error = ${message}, updated_at = now()
       WHERE id = ${actionId}::uuid`.catch(() => 0);
  }

  async function holdsLease(fetchRunId: string, leaseToken: string): Promise<boolean> {
    const rows = await prisma.$queryRaw<unknown[]>`
      SELECT 1 FROM fetch_run WHERE id = ${fetchRunId}::uuid AND lease_token = ${leaseToken}::uuid AND status = 'running'`;
    return rows.length === 1;
  }

  /**
   * Runs a partner call with heartbeats (a hanging call still sees a cancellation) and the cancel
   * signal, counting its outcome for the source (metrics).
   */
  async function withHeartbeats<T>(source: string, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ctx = Context.current();
    const stop = heartbeatEvery(ctx);
    try {
      return await observed(deps, source, call(ctx.cancellationSignal));
    } finally {
      stop();
    }
  }

  return {
    /**
     * Writes the intent row of an action (state `attempting`, no call made yet), fenced by the
     * run's lease. Idempotent: a repeat returns the row as it is now.
     * @throws ApplicationFailure LeaseLost when the run is no longer held by this lease.
     */
    async recordDownstreamIntent(input: RecordIntentInput): Promise<DownstreamActionView> {
      const businessKey = idempotencyKeyFor({
        jobType: FETCH_RECORDS,
        sourceId: input.sourceId,
        businessDate: input.businessDate,
      });
      // Also the reference the partner is given: one per action and claim, so a later claim of
      // the same key never adopts (or voids) an earlier claim's effect.
      const key = `${businessKey}:${input.action}:r${input.round}`;
      // An earlier claim's action still unsettled (needs_manual, or its compensation not done)
      // may be live at the partner under its own reference: acting again could double the
      // effect. The run fails visibly instead; an operator settles the earlier one first.
      const earlier = await prisma.downstreamAction.findFirst({
        where: {
          fetchRunId: input.fetchRunId,
          action: input.action,
          round: { lt: input.round },
          state: { in: [...UNSETTLED_STATES] },
        },
        select: { id: true, state: true },
      });
      if (earlier) {
        throw failure(
          'InvalidInput',
          'EARLIER_ACTION_UNSETTLED',
          `an earlier ${input.action} of this run (compensation ${earlier.id}) is ${earlier.state}: settle it first (durable-fetch compensations show ${earlier.id})`,
        );
      }
      await prisma.$executeRaw`
        INSERT INTO downstream_action (id, fetch_run_id, business_key, key, round, action, step, reference)
        SELECT gen_random_uuid(), r.id, ${businessKey}, ${key}, ${input.round}, ${input.action}, ${input.step}, ${key}
          FROM fetch_run r
         WHERE r.id = ${input.fetchRunId}::uuid AND r.lease_token = ${input.leaseToken}::uuid AND r.status = 'running'
        ON CONFLICT (key) DO NOTHING`;
      const row = await prisma.downstreamAction.findUnique({ where: { key } });
      if (!row) throw leaseLost(input);
      return view(row);
    },

    /**
     * Submits the run's summary (page and record counts, nothing else) with `POST /submissions`,
     * which is NOT idempotent. The call is counted on the row before it is made; the partner's id
     * is recorded after. It is made only when the row says exactly `expectedAttempts` calls were
     * made before: more means an earlier attempt of this activity died with its outcome unknown.
     * @throws ApplicationFailure OutcomeUnknown (non-retryable) whenever the effect may exist
     *   without our knowing its id: the workflow reconciles by reference, never calls blindly;
     *   InvalidInput/PermissionDenied/NotFound when the partner refused outright (`not_applied`);
     *   LeaseLost.
     */
    async submitSummary(input: SubmitSummaryInput): Promise<{ partnerId: string }> {
      const source = await loadEnabledSource(prisma, input.sourceId);
      const taken = await prisma.$queryRaw<{ reference: string; pages: number; records: number }[]>`
        UPDATE downstream_action a
           SET attempts = a.attempts + 1, updated_at = now()
          FROM fetch_run r
         WHERE a.id = ${input.actionId}::uuid AND a.state = 'attempting' AND a.attempts = ${input.expectedAttempts}
           AND r.id = a.fetch_run_id AND r.id = ${input.fetchRunId}::uuid
           AND r.lease_token = ${input.leaseToken}::uuid AND r.status = 'running'
        RETURNING a.reference, r.pages_stored AS pages, r.records_stored AS records`;
      const intent = taken[0];
      if (!intent) return settledBefore(input);

      let submission: Submission;
      try {
        submission = await withHeartbeats(source.id, (signal) =>
          createSubmission(deps.http, target(source, signal), {
            reference: intent.reference,
            summary: { pages: intent.pages, records: intent.records },
          }),
        );
      } catch (err) {
        const { type, message } = errorFields(err, `partner ${source.id} submit`);
        if (REJECTIONS.has(type)) {
          await prisma.$executeRaw`
            UPDATE downstream_action SET state = 'not_applied', last_error_type = ${type}, last_error = ${message},
                   updated_at = now()
             WHERE id = ${input.actionId}::uuid AND state = 'attempting'`;
          throw err;
        }
        await prisma.$executeRaw`
          UPDATE downstream_action SET state = 'unknown', last_error_type = ${type}, last_error = ${message},
                 updated_at = now()
           WHERE id = ${input.actionId}::uuid AND state = 'attempting'`;
        deps.log.warn({ actionId: input.actionId, errorType: type }, 'downstream outcome unknown');
        // A cancelled run stops here; its compensation reconciles the row.
        if (Context.current().cancellationSignal.aborted) throw err;
        throw outcomeUnknown(`${message}; the submission may exist: reconcile by reference`);
      }
      crashPoint(deps.crashPoint, 'after-submit');
      // Only this attempt's call may record its id: a stale attempt (its activity timed out and
      // was retried meanwhile) finds the count moved on, and its submission stays for
      // reconciliation to find (two live under one reference: needs_manual; `reconcile` lists it).
      const recorded = await prisma.$executeRaw`
        UPDATE downstream_action
           SET state = 'confirmed', partner_id = ${submission.id}, partner_state = ${submission.status},
               confirmed_at = now(), last_error_type = NULL, last_error = NULL, updated_at = now()
         WHERE id = ${input.actionId}::uuid AND state = 'attempting' AND attempts = ${input.expectedAttempts + 1}`;
      if (recorded !== 1) {
        deps.log.error(
          { actionId: input.actionId, partnerId: submission.id },
          'a stale attempt made a submission the ledger no longer expects: reconciliation will see it',
        );
        throw outcomeUnknown(
          'this attempt was superseded after its call; the submission is left to reconciliation',
        );
      }
      deps.log.info({ actionId: input.actionId, partnerId: submission.id }, 'downstream submission recorded');
      return { partnerId: submission.id };
    },

    /**
     * Settles an unknown outcome by looking the action's reference up at the partner (a read).
     * Known id: refreshes what the partner says of it. Unknown id: exactly one live submission
     * under the reference is adopted; none means nothing happened (`attempting` again for
     * `onAbsent: 'retry'`, `not_applied` for `'settle'`).
     * @throws ApplicationFailure OutcomeUnknown (non-retryable) when the answer is ambiguous (several
     *   live submissions, or the partner no longer knows a recorded id); the HTTP client's typed
     *   failures when the lookup fails (retried within the lookup preset).
     */
    async reconcileDownstream(input: ReconcileActionInput): Promise<ReconcileActionResult> {
      const row = await loadAction(input.actionId);
      if (row.state === 'not_applied') return { found: false, attempts: row.attempts };
      if (row.state === 'compensated' || row.state === 'resolved' || row.state === 'needs_manual') {
        if (row.partnerId)
          return { found: true, partnerId: row.partnerId, partnerState: row.partnerState ?? '' };
        throw outcomeUnknown(`downstream action ${row.id} is ${row.state}: nothing to reconcile`);
      }
      const source = await loadSource(prisma, row.run.sourceId);
      await prisma.$executeRaw`UPDATE downstream_action SET lookups = lookups + 1, updated_at = now() WHERE id = ${row.id}::uuid`;
      let found: Submission[];
      try {
        found = await withHeartbeats(source.id, (signal) =>
          findSubmissions(deps.http, target(source, signal), row.reference),
        );
      } catch (err) {
        await noteError(row.id, err, `partner ${source.id} lookup`);
        throw err;
      }
      if (row.partnerId) {
        const known = found.find((s) => s.id === row.partnerId);
        if (!known) throw outcomeUnknown(`partner ${source.id} no longer lists submission ${row.partnerId}`);
        if (known.status === 'voided') {
          await prisma.$executeRaw`
            UPDATE downstream_action SET state = 'compensated', partner_state = 'voided',
                   compensated_at = COALESCE(compensated_at, now()), updated_at = now()
             WHERE id = ${row.id}::uuid AND state IN ('confirmed', 'compensating', 'unknown', 'attempting')`;
        } else {
          await prisma.$executeRaw`
            UPDATE downstream_action SET partner_state = ${known.status}, updated_at = now() WHERE id = ${row.id}::uuid`;
        }
        return { found: true, partnerId: known.id, partnerState: known.status };
      }
      const live = found.filter((s) => s.status !== 'voided');
      if (live.length > 1) {
        throw outcomeUnknown(`partner ${source.id} holds ${live.length} live submissions for one action`);
      }
      const [adopted] = live;
      if (adopted) {
        await prisma.$executeRaw`
          UPDATE downstream_action
             SET state = CASE WHEN state = 'compensating' THEN state ELSE 'confirmed' END,
                 partner_id = ${adopted.id}, partner_state = ${adopted.status},
                 confirmed_at = now(), updated_at = now()
           WHERE id = ${row.id}::uuid AND partner_id IS NULL
             AND state IN ('attempting', 'unknown', 'compensating')`;
        deps.log.info({ actionId: row.id, partnerId: adopted.id }, 'reconciliation found the effect');
        return { found: true, partnerId: adopted.id, partnerState: adopted.status };
      }
      const next = input.onAbsent === 'retry' ? 'attempting' : 'not_applied';
      await prisma.$executeRaw`
        UPDATE downstream_action SET state = ${next}::downstream_state, updated_at = now()
         WHERE id = ${row.id}::uuid AND state IN ('attempting', 'unknown', 'compensating') AND partner_id IS NULL`;
      deps.log.info({ actionId: row.id, next }, 'reconciliation found no effect');
      return { found: false, attempts: row.attempts };
    },

    /**
     * Confirms the recorded submission (`POST /submissions/:id/confirm`, repeat-safe by id),
     * fenced by the run's lease.
     * @throws ApplicationFailure LeaseLost; the HTTP client's typed failures (a 409 for a voided
     *   submission is InvalidInput, permanent).
     */
    async confirmSubmission(input: ConfirmSubmissionInput): Promise<void> {
      if (!(await holdsLease(input.fetchRunId, input.leaseToken))) throw leaseLost(input);
      const source = await loadEnabledSource(prisma, input.sourceId);
      const row = await loadAction(input.actionId);
      if (!row.partnerId) throw failure('Internal', 'NO_PARTNER_ID', `action ${row.id} has no partner id`);
      const partnerId = row.partnerId;
      let confirmed: Submission;
      try {
        confirmed = await withHeartbeats(source.id, (signal) =>
          actOnSubmission(deps.http, target(source, signal), partnerId, 'confirm'),
        );
      } catch (err) {
        await noteError(row.id, err, `partner ${source.id} confirm`);
        throw err;
      }
      await prisma.$executeRaw`
        UPDATE downstream_action SET partner_state = ${confirmed.status}, last_error_type = NULL, last_error = NULL,
               updated_at = now()
         WHERE id = ${row.id}::uuid`;
    },

    /**
     * Undoes a recorded effect (`POST /submissions/:id/void`, repeat-safe by id). The attempt is
     * counted before the call. Works for a disabled source too: undoing is always allowed.
     * @throws the HTTP client's typed failures (retried within the compensation preset; the
     *   workflow then marks the row `needs_manual`).
     */
    async compensateDownstream(input: { actionId: string }): Promise<{ state: DownstreamStateName }> {
      const row = await loadAction(input.actionId);
      if (row.state === 'compensated' || row.state === 'not_applied' || row.state === 'resolved')
        return { state: row.state };
      // A run that succeeded keeps its effects, whatever asked (a failure seen after the commit).
      if (row.run.status === 'succeeded') return { state: row.state };
      if (!row.partnerId)
        throw failure('Internal', 'NO_PARTNER_ID', `action ${row.id}: reconcile before compensating`);
      const partnerId = row.partnerId;
      const source = await loadSource(prisma, row.run.sourceId);
      const started = await prisma.$executeRaw`
        UPDATE downstream_action SET state = 'compensating', compensation_attempts = compensation_attempts + 1,
               updated_at = now()
         WHERE id = ${row.id}::uuid AND state IN ('confirmed', 'compensating')`;
      if (started !== 1)
        throw failure('Internal', 'LEDGER_STATE', `action ${row.id} is ${row.state}, not compensable`);
      let voided: Submission;
      try {
        voided = await withHeartbeats(source.id, (signal) =>
          actOnSubmission(deps.http, target(source, signal), partnerId, 'void'),
        );
      } catch (err) {
        await noteError(row.id, err, `partner ${source.id} void`);
        throw err;
      }
      await prisma.$executeRaw`
        UPDATE downstream_action SET state = 'compensated', partner_state = ${voided.status}, compensated_at = now(),
               last_error_type = NULL, last_error = NULL, updated_at = now()
         WHERE id = ${row.id}::uuid AND state = 'compensating'`;
      deps.log.info({ actionId: row.id, partnerId }, 'downstream effect compensated');
      return { state: 'compensated' };
    },

    /** Hands an action to a human: `needs_manual` with the failure that exhausted its budget. */
    async markNeedsManual(input: MarkNeedsManualInput): Promise<void> {
      const message = input.errorMessage.slice(0, MAX_MESSAGE);
      await prisma.$executeRaw`
        UPDATE downstream_action SET state = 'needs_manual', last_error_type = ${input.errorType},
               last_error = ${message}, updated_at = now()
         WHERE id = ${input.actionId}::uuid AND state NOT IN ('compensated', 'not_applied', 'resolved')`;
      deps.log.warn(
        { actionId: input.actionId, errorType: input.errorType },
        'downstream action needs a human',
      );
    },

    /** The actions of one claim the compensation must still settle, latest step first. */
    async pendingCompensations(
      input: Pick<CompensateRunInput, 'fetchRunId' | 'round'>,
    ): Promise<DownstreamActionView[]> {
      const rows = await prisma.downstreamAction.findMany({
        where: {
          fetchRunId: input.fetchRunId,
          round: input.round,
          state: { in: [...COMPENSABLE_STATES] },
          // Only a run that ended without succeeding is compensated (never a succeeded one).
          run: { status: { in: ['dead_lettered', 'cancelled'] } },
        },
        orderBy: { step: 'desc' },
      });
      return rows.map(view);
    },

    /**
     * Marks a failed or cancelled run `compensated` once none of its actions (of any claim) is
     * unsettled; returns the run's status either way. Idempotent.
     */
    async settleCompensatedRun(input: { fetchRunId: string }): Promise<{ status: string }> {
      return settleRun(prisma, input.fetchRunId);
    },
  };

  /** submitSummary found the row not as expected: say why, without calling the partner. */
  async function settledBefore(input: SubmitSummaryInput): Promise<{ partnerId: string }> {
    const row = await loadAction(input.actionId);
    // An earlier attempt recorded its success, then its answer was lost.
    if (row.state === 'confirmed' && row.partnerId) return { partnerId: row.partnerId };
    if (!(await holdsLease(input.fetchRunId, input.leaseToken))) throw leaseLost(input);
    if (row.state === 'not_applied') {
      throw failure(
        'InvalidInput',
        'SUBMIT_REJECTED',
        `the partner refused this submission: ${row.lastError ?? ''}`,
      );
    }
    if ((row.state === 'attempting' || row.state === 'unknown') && row.attempts > input.expectedAttempts) {
      await prisma.$executeRaw`
        UPDATE downstream_action SET state = 'unknown', last_error_type = 'OutcomeUnknown',
               last_error = 'an earlier attempt ended without recording its outcome', updated_at = now()
         WHERE id = ${row.id}::uuid AND state = 'attempting'`;
      throw outcomeUnknown('an earlier attempt of this submission ended without recording its outcome');
    }
    throw failure(
      'Internal',
      'LEDGER_STATE',
      `downstream action ${row.id} is ${row.state} after ${row.attempts} calls`,
    );
  }
}

/** See `settleCompensatedRun`; shared with `compensations resolve`, which runs it in its transaction. */
export async function settleRun(
  db: Pick<ActivityDeps['prisma'], '$queryRaw'>,
  fetchRunId: string,
): Promise<{ status: string }> {
  const unsettled = UNSETTLED_STATES.join(',');
  const rows = await db.$queryRaw<{ status: string }[]>`
    WITH settled AS (
      UPDATE fetch_run SET status = 'compensated', updated_at = now()
       WHERE id = ${fetchRunId}::uuid AND status IN ('dead_lettered', 'cancelled')
         AND NOT EXISTS (SELECT 1 FROM downstream_action a
                          WHERE a.fetch_run_id = ${fetchRunId}::uuid
                            AND a.state::text = ANY (string_to_array(${unsettled}, ',')))
      RETURNING status::text AS status)
    SELECT status FROM settled
    UNION ALL
    SELECT status::text FROM fetch_run WHERE id = ${fetchRunId}::uuid AND NOT EXISTS (SELECT 1 FROM settled)`;
  return { status: rows[0]?.status ?? 'missing' };
}
