// Each connection of a Prisma client prepares a statement once (db/statement-names.ts): the
// server keeps it, under one name per text, and a client told not to (a pooler that cannot keep a
// session's statements) leaves nothing prepared. The namer itself is bounded: texts past its cap
// go unnamed, so a text that varies with data cannot grow every session's cache without end.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { prismaOn } from '../db/client.ts';
import { statementNamer } from '../db/statement-names.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';

let db: TestDatabase;

before(async () => {
  db = await useTestDatabase();
  await createSource(db.prisma, 'named-a', 'http://127.0.0.1:1');
});
after(async () => db?.drop());

/** The statements one session (a pool of one connection) has prepared after reading a source 3 times. */
async function preparedAfterReads(preparedStatements: boolean): Promise<string[]> {
  const prisma = prismaOn({ connectionString: db.url, max: 1 }, { preparedStatements });
  try {
    for (let i = 0; i < 3; i++) assert.ok(await prisma.source.findUnique({ where: { id: 'named-a' } }));
    const rows = await prisma.$queryRaw<{ statement: string }[]>`
      SELECT statement FROM pg_prepared_statements WHERE NOT from_sql ORDER BY prepare_time`;
    return rows.map((r) => r.statement);
  } finally {
    await prisma.$disconnect();
  }
}

void describe('prepared statements', () => {
  void it('a client prepares each statement once per connection, and one told not to prepares none', async () => {
    const named = await preparedAfterReads(true);
    const reads = named.filter((s) => s.includes('FROM "durable_fetch"."source"'));
    assert.equal(reads.length, 1, `the source read is prepared once: ${JSON.stringify(named)}`);
    assert.deepEqual(await preparedAfterReads(false), []);
  });

  void it('one name per text, the same on every call; unnamed past the cap', () => {
    const name = statementNamer(2);
    const a = name({ sql: 'SELECT 1' });
    const b = name({ sql: 'SELECT 2' });
    assert.notEqual(a, '');
    assert.notEqual(b, '');
    assert.notEqual(a, b);
    assert.equal(name({ sql: 'SELECT 1' }), a);
    assert.equal(name({ sql: 'SELECT 3' }), '', 'a third text goes unnamed');
    assert.equal(name({ sql: 'SELECT 2' }), b, 'named texts keep their names past the cap');
  });
});
