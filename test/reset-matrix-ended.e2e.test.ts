// The Web UI Reset matrix, runs that ended (R1, R3, R4, R11): succeeded, dead-lettered (the cause
// then removed) and cancelled while confirming (its submission voided by its compensation); each
// reset to its first execution's first workflow task, to its last workflow task, and to the first
// workflow task of its last continued-as-new execution — the ResetWorkflowExecution call the Web
// UI makes. Safe: each record and page event once, at most one submission per reference and never
// two live, a confirmed submission of a run that succeeds never voided, no dead letter whose
// reason is untrue. A reset that makes a dead-lettered key succeed closes its dead letter
// (`superseded`). A succeeded run reset to its first task is also in reset.e2e.test.ts (a single
// execution). The measured table is printed at the end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { detail, json, runCli } from './helpers/cli.ts';
import { waitFor } from './helpers/outbox.ts';
import {
  downstreamSettled,
  heldAtPartner,
  latestOutcome,
  type Measured,
  measure,
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
import { temporalAddress } from './helpers/temporal.ts';

const { stack, table } = useResetStack('2026-06-08', 'reset matrix: runs that ended');

type Expected = Pick<Measured, 'status' | 'submits' | 'live' | 'voided' | 'deadLetters'> & {
  outcome: string;
};

interface State {
  order: number;
  name: string;
  /** Brings the source's run to the state; returns the run id of its first execution. */
  bring: (s: Stack, sourceId: string) => Promise<string>;
  expected: Record<ResetKind, Expected>;
}

async function succeeded(s: Stack, sourceId: string): Promise<string> {
  await submittingSource(s, sourceId);
  const first = await start(s, sourceId, 1);
  assert.equal(await latestOutcome(s, sourceId), 'succeeded');
  return first;
}

/** The partner refuses the third page once (422): a dead letter; the fault is gone afterwards. */
async function deadLettered(s: Stack, sourceId: string): Promise<string> {
  await submittingSource(s, sourceId);
  s.partner.faults.add({ sourceId, kind: 'status', status: 422, afterRequests: 2, times: 1 });
  const first = await start(s, sourceId, 1);
  assert.equal(await latestOutcome(s, sourceId), 'InvalidInput');
  return first;
}

/**
 * Cancelled while its confirm call is held; its compensation voids the submission. The confirm an
 * activity task, which the cancel reaches at once: a local one (the default) is reached when its
 * workflow task next completes, by when it may have succeeded, and the run with it
 * (compensation.e2e.test.ts "a cancel that lands while a local confirm is held").
 */
async function cancelled(s: Stack, sourceId: string): Promise<string> {
  await submittingSource(s, sourceId, { localFetch: false });
  s.partner.faults.add({
    route: 'submissions',
    action: 'confirm',
    reference: referenceOf(s, sourceId, 1),
    kind: 'delay',
    delayMs: 4_000,
  });
  const first = await start(s, sourceId, 1);
  await heldAtPartner(s, sourceId, 'the partner holding the confirm call');
  await s.client.workflow.getHandle(workflowIdOf(s, sourceId)).cancel();
  await waitFor(
    async () =>
      (await s.db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } })).status === 'compensated',
    'the cancelled run compensated',
    90_000,
  );
  return first;
}

const ok = { outcome: 'succeeded', status: 'succeeded', submits: 1, live: 1, voided: 0, deadLetters: [] };
const STATES: State[] = [
  {
    order: 1,
    name: 'succeeded',
    bring: succeeded,
    expected: { first: ok, last: ok, 'last-can': ok },
  },
  {
    order: 2,
    name: 'dead-lettered',
    bring: deadLettered,
    expected: {
      first: { ...ok, deadLetters: ['InvalidInput/HTTP_422:superseded'] },
      last: {
        outcome: 'InvalidInput',
        status: 'dead_lettered',
        submits: 0,
        live: 0,
        voided: 0,
        deadLetters: ['InvalidInput/HTTP_422:open'],
      },
      'last-can': { ...ok, deadLetters: ['InvalidInput/HTTP_422:superseded'] },
    },
  },
  {
    order: 3,
    name: 'cancelled',
    bring: cancelled,
    expected: {
      first: { ...ok, submits: 2, voided: 1 },
      last: {
        outcome: 'CancelledFailure',
        status: 'compensated',
        submits: 1,
        live: 0,
        voided: 1,
        deadLetters: [],
      },
      'last-can': { ...ok, submits: 2, voided: 1 },
    },
  },
];

describe('reset matrix: runs that ended', { concurrency: true }, () => {
  for (const state of STATES) {
    for (const kind of ['first', 'last', 'last-can'] as const) {
      const sourceId = `rme-${state.order}-${kind}`;
      it(`a run ${state.name}, reset to ${kind}: ${state.expected[kind].outcome}, with one of everything and no untrue dead letter`, async () => {
        const s = stack();
        const first = await state.bring(s, sourceId);
        await reset(s, sourceId, kind, first);
        const outcome = await latestOutcome(s, sourceId);
        await downstreamSettled(s, sourceId);
        const m = await measure(s, sourceId);
        recordCell(table, { order: state.order, state: state.name, kind, outcome }, m);
        const { status, submits, live, voided, deadLetters } = m;
        assert.deepEqual({ outcome, status, submits, live, voided, deadLetters }, state.expected[kind]);
      });
    }
  }

  it('a dead-lettered run reset after its cause was removed succeeds, and dlq list/show show its letter superseded by that execution', async () => {
    const s = stack();
    const sourceId = 'rme-dlq';
    const first = await deadLettered(s, sourceId);
    await reset(s, sourceId, 'first', first);
    assert.equal(await latestOutcome(s, sourceId), 'succeeded');
    const { workflowRunId } = await s.db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
    const env = { DATABASE_URL: s.db.url, TEMPORAL_ADDRESS: temporalAddress() };
    const listed = json<{ id: string; status: string }[]>(
      await runCli(['dlq', 'list', '--source', sourceId, '--status', 'all', '--json'], env),
    );
    assert.deepEqual(
      listed.map((l) => l.status),
      ['superseded'],
    );
    const shown = await runCli(['dlq', 'show', listed[0]!.id], env);
    assert.equal(shown.code, 0, detail(shown));
    assert.match(shown.stdout, /^status\s+superseded$/m);
    assert.match(shown.stdout, /^closed by\s+system:run-succeeded$/m);
    assert.match(
      shown.stdout,
      new RegExp(`^close reason\\s+the run succeeded in execution ${workflowRunId}$`, 'm'),
    );
    const audit = await s.db.prisma.auditEntry.findMany({ where: { targetId: listed[0]!.id } });
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor]),
      [['dead_letter.supersede', 'system:run-succeeded']],
    );
  });
});
