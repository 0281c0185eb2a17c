/**
 * A run's compensation ledger against the partner's submissions. One write: a live submission
 * the ledger does not know is recorded as a stray, so that it is voided (never left alone).
 */
import type { DownstreamEffect } from '../../activities/job-api/define.ts';
import { AWAITING_SETTLEMENT_STATES as AWAITING_SETTLEMENT } from '../../contract/states.ts';
import { recordStray } from '../../db/ledger/ledger.ts';
import type { DownstreamAction } from '../../prisma/generated/client.ts';
import type { PartnerReader } from './partner-reader.ts';
import type { Snapshot } from './snapshot.ts';
import type { ReconcileContext } from './context.ts';
import type { Finding, MismatchCode, RunReport } from './findings.ts';
import { plural } from './findings.ts';

type Submission = DownstreamEffect;

const live = (s: Submission) => !s.voided;
const brief = (list: readonly Submission[]) => list.map((s) => ({ id: s.id, status: s.status }));
const describeHeld = (list: readonly Submission[]) =>
  list.length === 0 ? 'nothing' : list.map((s) => `${s.id} ${s.status}`).join(', ');

/**
 * A stray row (an effect the ledger did not expect, to be voided whatever the run's outcome)
 * against the partner: live means its void is still to come.
 */
function checkStray(
  action: DownstreamAction,
  held: readonly Submission[] | undefined,
  report: RunReport,
): void {
  const what = `stray ${action.id} (submission ${action.partnerId ?? '?'} under ${action.reference})`;
  if (action.state === 'compensated' || action.state === 'resolved' || action.state === 'not_applied') {
    const recorded = held?.find((s) => s.id === action.partnerId);
    if (action.state === 'compensated' && recorded && live(recorded)) {
      report.mismatches.push({
        code: 'COMPENSATED_BUT_LIVE',
        message: `${what} is compensated but ${recorded.id} is ${recorded.status} at the partner`,
        expected: 'voided',
        actual: recorded.status,
        actionId: action.id,
      });
    }
    return;
  }
  report.mismatches.push({
    code: 'STRAY_NOT_VOIDED',
    message: `${what} is ${action.state}: not voided yet (the workers' sweep starts its compensation)`,
    expected: 'compensated (voided)',
    actual: action.state,
    actionId: action.id,
  });
}

/**
 * The compensation ledger of the run against the partner's submissions. A live submission under
 * an action's reference that the ledger does not know is recorded as a stray of that action (the
 * one write reconcile makes: the workers' sweep then voids it).
 */
export async function checkActions(
  ctx: ReconcileContext,
  partner: PartnerReader,
  snap: Snapshot,
  report: RunReport,
): Promise<void> {
  const succeeded = snap.run.status === 'succeeded';
  const mismatch = (f: Finding<MismatchCode>) => report.mismatches.push(f);
  /** Confirmed rows of a succeeded run whose submission is live at the partner. */
  const liveConfirmed: string[] = [];

  for (const action of snap.actions) {
    const what = `action ${action.id} (${action.action}, round ${action.round})`;
    const held = await partner.read(
      `partner ${snap.source.id} submissions of ${action.reference}`,
      () => partner.submissions(action.reference),
      report,
    );
    const heldView = held ? brief(held) : 'unknown (partner unreachable)';
    const state = action.state;
    if (action.strayOf !== null) {
      checkStray(action, held, report);
      continue;
    }

    if (AWAITING_SETTLEMENT.includes(state)) {
      mismatch({
        code: 'UNSETTLED_ACTION',
        message: `${what} is ${state}: needs attention; the partner holds ${held ? describeHeld(held) : 'unknown (unreachable)'}`,
        expected: 'a settled state',
        actual: { state, partner: heldView },
        actionId: action.id,
      });
      continue;
    }
    if (state === 'resolved') {
      report.notes.push({
        code: 'ACTION_RESOLVED',
        message: `${what} was resolved by ${action.resolvedBy ?? 'an operator'}; the partner holds ${held ? describeHeld(held) : 'unknown (unreachable)'}`,
        actual: { partner: heldView },
        actionId: action.id,
      });
      continue;
    }
    if (!held) continue; // the partner could not be read: already reported
    const recorded = action.partnerId === null ? undefined : held.find((s) => s.id === action.partnerId);
    const strays = new Set(snap.actions.filter((a) => a.strayOf === action.id).map((a) => a.partnerId));
    const others = held.filter((s) => s.id !== action.partnerId && !strays.has(s.id) && live(s));

    if (state === 'not_applied') {
      const alive = held.filter(live);
      if (alive.length > 0) {
        mismatch({
          code: 'NOT_APPLIED_BUT_LIVE',
          message: `${what} is not_applied but the partner holds ${describeHeld(alive)} under ${action.reference}`,
          expected: [],
          actual: brief(alive),
          actionId: action.id,
        });
      }
      continue;
    }

    if (state === 'confirmed' || state === 'compensated') {
      if (action.partnerId !== null && !recorded) {
        mismatch({
          code: 'ACTION_NOT_AT_PARTNER',
          message: `${what} is ${state} with partner id ${action.partnerId}, which the partner does not list under ${action.reference}`,
          expected: action.partnerId,
          actual: brief(held),
          actionId: action.id,
        });
      } else if (action.partnerId === null && state === 'confirmed') {
        mismatch({
          code: 'ACTION_NOT_AT_PARTNER',
          message: `${what} is confirmed without a partner id; the partner holds ${describeHeld(held)}`,
          expected: 'a partner id',
          actual: brief(held),
          actionId: action.id,
        });
      }
    }

    if (state === 'confirmed' && recorded) {
      if (recorded.status === 'voided') {
        mismatch({
          code: 'ACTION_VOIDED_AT_PARTNER',
          message: `${what} is confirmed but submission ${recorded.id} is voided at the partner`,
          expected: succeeded ? 'confirmed' : 'submitted or confirmed',
          actual: recorded.status,
          actionId: action.id,
        });
      } else if (!succeeded) {
        mismatch({
          code: 'UNCOMPENSATED_ACTION',
          message: `run is ${snap.run.status} but ${what} is still confirmed and submission ${recorded.id} is ${recorded.status} at the partner: it was not compensated`,
          expected: 'compensated (voided)',
          actual: recorded.status,
          actionId: action.id,
        });
      } else {
        liveConfirmed.push(recorded.id);
        if (recorded.status !== 'confirmed') {
          mismatch({
            code: 'SUBMISSION_NOT_CONFIRMED',
            message: `run succeeded but submission ${recorded.id} is ${recorded.status} at the partner, not confirmed`,
            expected: 'confirmed',
            actual: recorded.status,
            actionId: action.id,
          });
        }
      }
    }

    if (state === 'compensated' && recorded && live(recorded)) {
      mismatch({
        code: 'COMPENSATED_BUT_LIVE',
        message: `${what} is compensated but submission ${recorded.id} is ${recorded.status} at the partner`,
        expected: 'voided',
        actual: recorded.status,
        actionId: action.id,
      });
    }

    if (others.length > 0) {
      const why = 'reconcile found it live beside the recorded submission';
      for (const s of others) {
        await recordStray(ctx.prisma, action, { partnerId: s.id, partnerState: s.status }, why);
      }
      mismatch({
        code: 'EXTRA_LIVE_SUBMISSION',
        message: `the partner holds ${plural(others.length, 'more live submission')} under ${action.reference} than ${what} records: ${describeHeld(others)}; recorded as strays, to be voided by the workers' sweep`,
        expected: action.partnerId === null ? [] : [action.partnerId],
        actual: brief(held.filter(live)),
        actionId: action.id,
      });
    }
  }

  if (
    succeeded &&
    snap.source.submitSummary &&
    !snap.actions.some((a) => a.state === 'confirmed' && a.strayOf === null)
  ) {
    mismatch({
      code: 'SUBMISSION_MISSING',
      message: `run succeeded and source ${snap.source.id} submits its summary, but no ledger row is confirmed`,
      expected: 'one confirmed submission',
      actual: snap.actions.map((a) => ({ id: a.id, state: a.state })),
    });
  }
  if (liveConfirmed.length > 1) {
    mismatch({
      code: 'DUPLICATE_SUBMISSION',
      message: `run succeeded with ${liveConfirmed.length} live submissions at the partner: ${liveConfirmed.join(', ')}`,
      expected: 1,
      actual: liveConfirmed,
    });
  }
}
