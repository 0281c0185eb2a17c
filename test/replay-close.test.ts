// A replay records on each letter that it retried it, even when the run it started succeeded
// first (R11): the run's success closes the key's open letters, and the replay's own record of the
// start comes a step later. Real PostgreSQL; the replay's activities called as the workflow calls
// them, in the order the race leaves them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createReplayActivities } from '../activities/dead-letters/replay.ts';
import { RUN_SUCCEEDED_ACTOR, supersedeOpenLettersSql } from '../db/dead-letters/close.ts';
import { reserveForReplay } from '../db/dead-letters/replay.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { insertDeadLetter } from './helpers/job-rows.ts';

let db: TestDatabase;
before(async () => {
  db = await useTestDatabase();
});
after(async () => {
  await db.drop();
});

/** The letter as it ends, and the replay's audit entries of it. */
async function letterAfter(id: string) {
  const letter = await db.prisma.deadLetter.findUniqueOrThrow({ where: { id } });
  const audits = await db.prisma.auditEntry.count({ where: { targetId: id, action: 'dead_letter.replay' } });
  return { status: letter.status, closedBy: letter.closedBy, audits };
}

describe('replay close', () => {
  it('replay close: a letter whose replayed run succeeded before the replay recorded the start still ends retried by the replay, audited once', async () => {
    await createSource(db.prisma, 'rc-raced', 'http://127.0.0.1:9');
    const { run, letter } = await insertDeadLetter(db.prisma, {
      jobType: 'fetch-records',
      sourceId: 'rc-raced',
      date: '2026-03-01',
    });
    const replay = createReplayActivities(testDeps(db.prisma));
    assert.deepEqual([...(await reserveForReplay(db.prisma, 'replay-1', [letter.id]))], [letter.id]);
    // The run the replay started succeeds first: its end closes the key's open letters.
    await db.prisma.$queryRaw(supersedeOpenLettersSql({ fetchRunId: run.id, workflowRunId: 'wr-1' }));
    assert.equal((await letterAfter(letter.id)).closedBy, RUN_SUCCEEDED_ACTOR);
    const mark = {
      replayId: 'replay-1',
      deadLetterId: letter.id,
      actor: 'ops-drill',
      outcome: 'started' as const,
    };
    await replay.markReplayed(mark);
    await replay.markReplayed(mark); // a repeat of the activity changes nothing
    assert.deepEqual(await letterAfter(letter.id), { status: 'retried', closedBy: 'ops-drill', audits: 1 });
  });

  it('replay close: a letter superseded while its key was found running (suppressed), or reserved by another replay, is left as it is', async () => {
    await createSource(db.prisma, 'rc-suppressed', 'http://127.0.0.1:9');
    const { run, letter } = await insertDeadLetter(db.prisma, {
      jobType: 'fetch-records',
      sourceId: 'rc-suppressed',
      date: '2026-03-02',
    });
    const replay = createReplayActivities(testDeps(db.prisma));
    await reserveForReplay(db.prisma, 'replay-2', [letter.id]);
    await db.prisma.$queryRaw(supersedeOpenLettersSql({ fetchRunId: run.id, workflowRunId: 'wr-2' }));
    await replay.markReplayed({
      replayId: 'replay-2',
      deadLetterId: letter.id,
      actor: 'ops',
      outcome: 'suppressed',
    });
    await replay.markReplayed({
      replayId: 'replay-other',
      deadLetterId: letter.id,
      actor: 'ops',
      outcome: 'started',
    });
    assert.deepEqual(await letterAfter(letter.id), {
      status: 'superseded',
      closedBy: RUN_SUCCEEDED_ACTOR,
      audits: 0,
    });
  });
});
