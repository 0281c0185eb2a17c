// The Web UI Reset matrix, runs still open (R1, R3, R4): a run held in a page fetch (in its only
// execution, and in a later continued-as-new execution), in the downstream submit, in the confirm,
// and paused at a page boundary; each reset to its first execution's first workflow task, to its
// last workflow task, and to the first workflow task of its last continued-as-new execution — the
// ResetWorkflowExecution call the Web UI makes. Safe: each record, page event and submission once,
// never two live submissions, a confirmed submission never voided, no dead letter, the run
// succeeded. Cells reset to the first workflow task of a single execution are in
// reset.e2e.test.ts. The measured table is printed at the end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SOURCE_RESUMED_SIGNAL } from '../contract/types.ts';
import { waitFor } from './helpers/outbox.ts';
import {
  currentRunId,
  downstreamSettled,
  heldAtPartner,
  latestOutcome,
  measure,
  readFaultTaken,
  recordCell,
  referenceOf,
  reset,
  type ResetKind,
  type Stack,
  start,
  submittingSource,
  useResetStack,
  workflowIdOf,
} from './helpers/reset-matrix.ts';

const { stack, table } = useResetStack('2026-06-07', 'reset matrix: runs still open');

interface State {
  order: number;
  name: string;
  /** Brings the source's run to the state; returns the run id of its first execution. */
  bring: (s: Stack, sourceId: string) => Promise<string>;
  /** What the operator does after the reset (e.g. resume the source). */
  afterReset?: (s: Stack, sourceId: string, before: string) => Promise<void>;
  kinds: ResetKind[];
}

async function heldInConfirm(s: Stack, sourceId: string): Promise<string> {
  await submittingSource(s, sourceId);
  s.partner.faults.add({
    route: 'submissions',
    action: 'confirm',
    reference: referenceOf(s, sourceId, 1),
    kind: 'delay',
    delayMs: 8_000,
  });
  const first = await start(s, sourceId, 1);
  await heldAtPartner(s, sourceId, 'the partner holding the confirm call');
  return first;
}

async function heldInSubmit(s: Stack, sourceId: string): Promise<string> {
  await submittingSource(s, sourceId);
  // Held longer than the client waits: the first submit never takes effect.
  s.partner.faults.add({
    route: 'submissions',
    action: 'submit',
    reference: referenceOf(s, sourceId, 1),
    kind: 'delay',
    delayMs: 6_000,
  });
  const first = await start(s, sourceId, 1);
  await heldAtPartner(s, sourceId, 'the partner holding the submit call');
  return first;
}

/** Held in the fetch of the second page: its own execution with `pagesPerExecution: 1`. */
const heldInFetch = (pagesPerExecution: number | undefined) => async (s: Stack, sourceId: string) => {
  await submittingSource(s, sourceId);
  s.partner.faults.add({ sourceId, kind: 'delay', delayMs: 5_000, afterRequests: 1 });
  const first = await start(s, sourceId, pagesPerExecution);
  await readFaultTaken(s, sourceId, 'the second page held');
  return first;
};

async function fetchStatus(s: Stack, sourceId: string): Promise<{ runId: string; status: string }> {
  const d = await s.client.workflow.getHandle(workflowIdOf(s, sourceId)).describe();
  return {
    runId: d.runId,
    status: d.status.name === 'RUNNING' ? String(d.searchAttributes.FetchStatus?.[0]) : d.status.name,
  };
}

/** Paused at the boundary after its second page, in its second execution. */
async function paused(s: Stack, sourceId: string): Promise<string> {
  await submittingSource(s, sourceId);
  s.partner.faults.add({ sourceId, kind: 'delay', delayMs: 2_000, afterRequests: 1 });
  const first = await start(s, sourceId, 1);
  await readFaultTaken(s, sourceId, 'the second page held');
  await s.db.prisma.source.update({ where: { id: sourceId }, data: { pausedAt: new Date() } });
  await waitFor(async () => (await fetchStatus(s, sourceId)).status === 'paused', 'the run paused', 90_000);
  return first;
}

/** The operator resumes the source once the reset execution waits (or has ended). */
async function resumeSource(s: Stack, sourceId: string, before: string): Promise<void> {
  await waitFor(
    async () => {
      const now = await fetchStatus(s, sourceId);
      return now.runId !== before && now.status !== 'running';
    },
    'the reset execution waiting',
    90_000,
  );
  await s.db.prisma.source.update({ where: { id: sourceId }, data: { pausedAt: null } });
  await s.client.workflow
    .getHandle(workflowIdOf(s, sourceId))
    .signal(SOURCE_RESUMED_SIGNAL)
    .catch(() => undefined); // the execution may have ended already
}

const STATES: State[] = [
  { order: 4, name: 'fetching a page', bring: heldInFetch(undefined), kinds: ['last'] },
  { order: 5, name: 'fetching, later exec', bring: heldInFetch(1), kinds: ['first', 'last', 'last-can'] },
  { order: 6, name: 'in the submit', bring: heldInSubmit, kinds: ['first', 'last', 'last-can'] },
  { order: 7, name: 'in the confirm', bring: heldInConfirm, kinds: ['first', 'last', 'last-can'] },
  {
    order: 8,
    name: 'paused',
    bring: paused,
    afterReset: resumeSource,
    kinds: ['first', 'last', 'last-can'],
  },
];

describe('reset matrix: runs still open', { concurrency: true }, () => {
  for (const state of STATES) {
    for (const kind of state.kinds) {
      const sourceId = `rmr-${state.order}-${kind}`;
      it(`a run ${state.name}, reset to ${kind}: it succeeds with one of everything and no dead letter`, async () => {
        const s = stack();
        const first = await state.bring(s, sourceId);
        const before = await currentRunId(s, sourceId);
        await reset(s, sourceId, kind, first);
        await state.afterReset?.(s, sourceId, before);
        const outcome = await latestOutcome(s, sourceId);
        await downstreamSettled(s, sourceId);
        const m = await measure(s, sourceId);
        recordCell(table, { order: state.order, state: state.name, kind, outcome }, m);
        assert.deepEqual(
          {
            outcome,
            status: m.status,
            submits: m.submits,
            live: m.live,
            voided: m.voided,
            deadLetters: m.deadLetters,
          },
          { outcome: 'succeeded', status: 'succeeded', submits: 1, live: 1, voided: 0, deadLetters: [] },
        );
      });
    }
  }
});
