// A source read beside another statement's work (db/sources.ts `sourceColumns`, as fetchPage's
// lease renewal reads it) must be the very row Prisma's `findUnique` returns: every field, its
// Dates, numbers, booleans and parsed JSON (R2: the step decides on what the operator set).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { findSource, sourceColumns, sourceOfRow } from '../db/sources.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';

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
});
