/**
 * The compensation ledger's activities (R4): a non-idempotent downstream call is recorded before
 * it is made (intent) and after (outcome); an unknown outcome is settled by a lookup at the
 * partner once the call can no longer take effect, never by calling again blindly; an effect the
 * run must not keep — or that the ledger did not expect — is undone (voided) and recorded. Rows
 * live in `downstream_action` (activities/downstream/ledger.ts); states are explained in
 * docs/runbook.md.
 */
import type { ActivityDeps } from '../deps.ts';
import { createPartnerCalls } from './calls.ts';
import { createCompensateActivities } from './compensate.ts';
import { createIntentActivities } from './intent.ts';
import { createReconcileActivity } from './reconcile.ts';
import { createSubmitActivities } from './submit.ts';

export function createDownstreamActivities(deps: ActivityDeps) {
  const calls = createPartnerCalls(deps);
  return {
    ...createIntentActivities(deps),
    ...createSubmitActivities(deps, calls),
    ...createReconcileActivity(deps, calls),
    ...createCompensateActivities(deps, calls),
  };
}
