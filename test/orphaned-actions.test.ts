// The definition of an orphaned downstream action (db/ledger/orphaned-actions.ts), case by case on real
// PostgreSQL (R4, R11): a ledger row that still needs settling while its run has no live owner is
// counted; one a live run, a compensation at work, a human (needs_manual) or a succeeded run's
// kept effect accounts for is not.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ORPHAN_QUIET_SECONDS, readOrphanedActions } from '../db/ledger/orphaned-actions.ts';
import type { DownstreamState, RunStatus } from '../prisma/generated/client.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { insertRun } from './helpers/job-rows.ts';

let db: TestDatabase;
before(async () => {
  db = await useTestDatabase();
  await createSource(db.prisma, 'orph', 'http://127.0.0.1:9');
});
after(async () => {
  await db?.drop();
});

const ago = (seconds: number) => new Date(Date.now() - seconds * 1000);
const LONG_AGO = ORPHAN_QUIET_SECONDS * 2;
let day = 0;

interface Case {
  run: { status: RunStatus; leaseUntil?: Date; finishedAt?: Date };
  action: { state: DownstreamState; updatedAt?: Date; settlesAt?: Date; stray?: boolean };
}

/** One run (its own business date) with one ledger row; returns the run's id. */
async function insert(c: Case): Promise<string> {
  const date = `2026-01-${String(++day).padStart(2, '0')}`;
  const run = await insertRun(db.prisma, {
    jobType: 'fetch-records',
    sourceId: 'orph',
    date,
    status: c.run.status,
  });
  await db.prisma.fetchRun.update({
    where: { id: run.id },
    data: { leaseUntil: c.run.leaseUntil ?? null, finishedAt: c.run.finishedAt ?? null },
  });
  const key = `fetch-records:orph:${date}`;
  const made = await db.prisma.downstreamAction.create({
    data: {
      fetchRunId: run.id,
      businessKey: key,
      key: `${key}:submit-summary:r1`,
      round: 1,
      action: 'submit-summary',
      step: 1,
      reference: `${key}:submit-summary:r1`,
      state: c.action.state,
      updatedAt: c.action.updatedAt ?? new Date(),
      settlesAt: c.action.settlesAt ?? null,
    },
  });
  if (c.action.stray) {
    await db.prisma.downstreamAction.update({ where: { id: made.id }, data: { strayOf: made.id } });
  }
  return run.id;
}

describe('orphaned actions (definition)', () => {
  it('orphaned-actions: counts exactly the unsettled rows whose run has no live owner', async () => {
    const counted = {
      'running, lease run out, confirmed (a terminated run)': {
        run: { status: 'running', leaseUntil: ago(5) },
        action: { state: 'confirmed' },
      },
      'running, lease run out, attempting': {
        run: { status: 'running', leaseUntil: ago(5) },
        action: { state: 'attempting' },
      },
      'dead-lettered long ago, confirmed, untouched (its compensation never ran)': {
        run: { status: 'dead_lettered', finishedAt: ago(LONG_AGO) },
        action: { state: 'confirmed', updatedAt: ago(LONG_AGO) },
      },
      'cancelled long ago, compensating, untouched (its compensation was terminated)': {
        run: { status: 'cancelled', finishedAt: ago(LONG_AGO) },
        action: { state: 'compensating', updatedAt: ago(LONG_AGO) },
      },
      'succeeded long ago, a stray left live': {
        run: { status: 'succeeded', finishedAt: ago(LONG_AGO) },
        action: { state: 'confirmed', updatedAt: ago(LONG_AGO), stray: true },
      },
    } satisfies Record<string, Case>;
    const notCounted = {
      'running under a live lease, confirmed': {
        run: { status: 'running', leaseUntil: new Date(Date.now() + 60_000) },
        action: { state: 'confirmed' },
      },
      'succeeded, its confirmed effect kept': {
        run: { status: 'succeeded', finishedAt: ago(LONG_AGO) },
        action: { state: 'confirmed', updatedAt: ago(LONG_AGO) },
      },
      'dead-lettered just now (its compensation is starting)': {
        run: { status: 'dead_lettered', finishedAt: ago(1) },
        action: { state: 'confirmed', updatedAt: ago(LONG_AGO) },
      },
      'dead-lettered long ago, unknown, touched just now (a compensation at work)': {
        run: { status: 'dead_lettered', finishedAt: ago(LONG_AGO) },
        action: { state: 'unknown', updatedAt: ago(1) },
      },
      'dead-lettered long ago, attempting, its settle window still open': {
        run: { status: 'dead_lettered', finishedAt: ago(LONG_AGO) },
        action: { state: 'attempting', updatedAt: ago(LONG_AGO), settlesAt: new Date(Date.now() + 30_000) },
      },
      'needs_manual (a human has it; counted on its own)': {
        run: { status: 'dead_lettered', finishedAt: ago(LONG_AGO) },
        action: { state: 'needs_manual', updatedAt: ago(LONG_AGO) },
      },
      compensated: {
        run: { status: 'compensated', finishedAt: ago(LONG_AGO) },
        action: { state: 'compensated', updatedAt: ago(LONG_AGO) },
      },
    } satisfies Record<string, Case>;
    const ids = new Map<string, string>();
    for (const [name, c] of [...Object.entries(counted), ...Object.entries(notCounted)]) {
      ids.set(await insert(c), name);
    }
    const found = await readOrphanedActions(db.prisma, { limit: 100 });
    assert.deepEqual(found.runs.map((r) => ids.get(r.fetchRunId)).sort(), Object.keys(counted).sort());
    assert.equal(found.count, Object.keys(counted).length);
    const limited = await readOrphanedActions(db.prisma, { limit: 2 });
    assert.deepEqual([limited.count, limited.runs.length], [5, 2], 'the count covers runs not listed');
  });
});
