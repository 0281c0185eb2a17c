// A source read beside another statement's work (db/sources.ts `sourceColumns`, as the lease
// renewals of fetchPage, confirmSubmission and checkSourcePause read it) must be the very row
// Prisma's `findUnique` returns: every field, its Dates, numbers, booleans and parsed JSON (R2:
// the step decides on what the operator set). The renewal that reads it is fenced (R1, R9).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import { renewLeaseReadingSource } from '../db/fetch-run.ts';
import { findSource, sourceColumns, sourceOfRow } from '../db/sources.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { insertHeldRun } from './helpers/job-rows.ts';

let db: TestDatabase;

before(async () => {
  db = await useTestDatabase();
  await createSource(db.prisma, 'row-defaults', 'http://127.0.0.1:1');
  // Every nullable column set, so that each column's type is compared with a value.
  await createSource(db.prisma, 'row-full', 'http://127.0.0.1:2', {
    credentialsRef: 'DF_SECRET_ROW',
    retryPolicy: 'partnerHttp',
    downstream: 'shared',
    enabled: false,
    config: { path: '/items', nested: { limit: 5, flags: [true, null] } },
    schedule: { cron: '0 2 * * *', timezone: 'Europe/Lisbon' },
    submitSummary: true,
    submitMaxProcessingMs: 1_234,
    maxRunTimeMs: 5_678,
    pausedAt: new Date('2026-03-02T03:00:00.123Z'),
    pausedReason: 'maintenance',
    pausedBy: 'ops',
    removedAt: new Date('2026-03-03T00:00:00Z'),
    removedBy: 'ops',
  });
});
after(async () => db?.drop());

async function readBeside(id: string) {
  const rows = await db.prisma.$queryRaw<Record<string, unknown>[]>`
    SELECT 1 AS own, ${sourceColumns('s')} FROM (SELECT 1) one LEFT JOIN source s ON s.id = ${id}`;
  assert.equal(rows.length, 1);
  return rows[0] ?? {};
}

void describe('source row', () => {
  for (const id of ['row-defaults', 'row-full']) {
    void it(`${id}: the row read beside a statement is findUnique's`, async () => {
      const expected = await findSource(db.prisma, id);
      assert.ok(expected);
      assert.deepEqual(sourceOfRow(await readBeside(id)), expected);
    });
  }

  void it('no source joined reads as null, as findUnique does', async () => {
    assert.equal(await findSource(db.prisma, 'row-none'), null);
    assert.equal(sourceOfRow(await readBeside('row-none')), null);
  });

  void it('a lease renewal reads the source as it is, and a fence that does not hold renews and reads nothing', async () => {
    const { run, fence } = await insertHeldRun(
      db.prisma,
      { jobType: 'fetch-records', sourceId: 'row-full', date: '2026-03-04' },
      { leaseUntil: new Date(Date.now() - 1_000) },
    );
    const held = await renewLeaseReadingSource(db.prisma, fence, 60_000, 'wf-run-2', 'row-full');
    assert.deepEqual(held, { source: await findSource(db.prisma, 'row-full') });
    const renewed = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: run.id } });
    assert.ok((renewed.leaseUntil?.getTime() ?? 0) > Date.now() + 30_000, 'the lease is renewed');
    assert.equal(renewed.workflowRunId, 'wf-run-2', 'the execution that holds the run is recorded');

    assert.deepEqual(await renewLeaseReadingSource(db.prisma, fence, 60_000, undefined, 'row-none'), {
      source: null,
    });
    const stale = { fetchRunId: run.id, leaseToken: randomUUID() };
    assert.equal(await renewLeaseReadingSource(db.prisma, stale, 1, 'wf-run-3', 'row-full'), undefined);
    const after = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: run.id } });
    assert.equal(after.workflowRunId, 'wf-run-2', 'a stale fence records nothing');
    assert.ok((after.leaseUntil?.getTime() ?? 0) > Date.now() + 30_000, 'a stale fence renews nothing');
  });
});
