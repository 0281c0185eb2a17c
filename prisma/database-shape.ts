// The database side of the drift check: the current schema's tables, columns, indexes, foreign keys
// and enums, read from pg_catalog by the queries in ./sql and reduced to the same Shape as the
// Prisma schema.
import { readFileSync } from 'node:fs';
import { Client, escapeIdentifier } from 'pg';
import { ENGINE_SCHEMA } from '../contract/engine-schema.ts';
import { tlsConnection } from '../db/connection.ts';
import { type Shape, type Table } from './shape.ts';

const sql = (name: string) => readFileSync(new URL(`./sql/${name}`, import.meta.url), 'utf8');
const COLUMNS_SQL = sql('drift-columns.sql');
const INDEXES_SQL = sql('drift-indexes.sql');
const FOREIGN_KEYS_SQL = sql('drift-foreign-keys.sql');
const ENUMS_SQL = sql('drift-enums.sql');

// pg_constraint's one-letter ON DELETE / ON UPDATE codes, named as the Prisma schema's onDelete/onUpdate.
const ACTIONS: Record<string, string> = {
  a: 'NoAction',
  r: 'Restrict',
  c: 'Cascade',
  n: 'SetNull',
  d: 'SetDefault',
};

/**
 * The shape of one PostgreSQL schema of the database (default the engine's), `_prisma_migrations`
 * left out. Read-only: one short connection, closed in all cases. Throws when the database is
 * unreachable or a catalog query fails.
 */
export async function shapeFromDatabase(connectionString: string, schema = ENGINE_SCHEMA): Promise<Shape> {
  // The catalog queries read current_schema(): the one schema on this session's search_path.
  const client = new Client({
    ...tlsConnection(connectionString),
    options: `-c search_path=${escapeIdentifier(schema)}`,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    const columns = await client.query<{
      table: string;
      column: string;
      nullable: boolean;
      type: string;
      default: string | null;
    }>(COLUMNS_SQL);
    const indexes = await client.query<{
      table: string;
      name: string;
      primary: boolean;
      unique: boolean;
      special: boolean;
      columns: string[];
    }>(INDEXES_SQL);
    const fks = await client.query<{
      table: string;
      name: string;
      ref_table: string;
      on_delete: string;
      on_update: string;
      columns: string[];
      ref_columns: string[];
    }>(FOREIGN_KEYS_SQL);
    const enums = await client.query<{ name: string; values: string[] }>(ENUMS_SQL);
    const tables = new Map<string, Table>();
    const tableNamed = (name: string) => {
      let table = tables.get(name);
      if (!table) tables.set(name, (table = { columns: new Map(), indexes: [], foreignKeys: [] }));
      return table;
    };
    for (const c of columns.rows) {
      tableNamed(c.table).columns.set(c.column, {
        type: c.type,
        nullable: c.nullable,
        default: actualDefault(c.default),
      });
    }
    for (const i of indexes.rows) {
      const kind = i.primary ? 'primary key' : i.unique ? 'unique index' : 'index';
      // Expression and partial indexes cannot be expressed in the Prisma schema: mark them so they show up.
      const cols = i.special ? ['<expression or predicate>'] : i.columns;
      tableNamed(i.table).indexes.push({ kind, columns: cols, name: i.name });
    }
    for (const f of fks.rows) {
      tableNamed(f.table).foreignKeys.push({
        columns: f.columns,
        references: `${f.ref_table}(${f.ref_columns.join(', ')})`,
        onDelete: ACTIONS[f.on_delete] ?? f.on_delete,
        onUpdate: ACTIONS[f.on_update] ?? f.on_update,
        name: f.name,
      });
    }
    tables.delete('_prisma_migrations');
    return { tables, enums: new Map(enums.rows.map((e) => [e.name, e.values])) };
  } finally {
    await client.end().catch(() => {});
  }
}

function actualDefault(expression: string | null): string | null {
  if (expression === null) return null;
  if (/^nextval\(/.test(expression)) return 'autoincrement';
  if (expression === 'now()' || expression === 'CURRENT_TIMESTAMP') return 'CURRENT_TIMESTAMP';
  const literal = /^'((?:[^']|'')*)'::[\w\s."[\]()]+$/.exec(expression);
  return literal ? literal[1]!.replace(/''/g, "'") : expression;
}
