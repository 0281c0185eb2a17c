/**
 * Rows and bytes of every table of a bench database, for the capacity and retention sections: the
 * exact row count (`count(*)`) and `pg_total_relation_size` (heap, indexes and TOAST) of each
 * table in the `public` schema but Prisma's bookkeeping. Bytes follow PostgreSQL's storage: a
 * DELETE frees space for reuse (autovacuum) without shrinking the files, so a table whose rows
 * are bounded has bounded bytes too, at the size its busiest window needed.
 */
import pg from 'pg';
import { engineConnection } from '../db/pool-config.ts';

export interface TableSize {
  rows: number;
  bytes: number;
}

export type TableSizes = Record<string, TableSize>;

/** Every table's rows and bytes now. Read-only; one connection, closed before it returns. */
export async function tableSizes(databaseUrl: string): Promise<TableSizes> {
  const client = new pg.Client(engineConnection(databaseUrl));
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string; bytes: string }>(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid)::text AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> '_prisma_migrations'
        ORDER BY c.relname`,
    );
    const sizes: TableSizes = {};
    for (const t of tables) {
      const { rows } = await client.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM ${pg.escapeIdentifier(t.name)}`,
      );
      sizes[t.name] = { rows: Number(rows[0]?.n ?? 0), bytes: Number(t.bytes) };
    }
    return sizes;
  } finally {
    await client.end();
  }
}

/** What each table gained from `before` to `after`, scaled to `per` of `count` units (runs, events). */
export function growth(before: TableSizes, after: TableSizes, count: number, per: number): TableSizes {
  const scaled: TableSizes = {};
  for (const [name, a] of Object.entries(after)) {
    const b = before[name] ?? { rows: 0, bytes: 0 };
    scaled[name] = {
      rows: Math.round(((a.rows - b.rows) * per) / count),
      bytes: Math.round(((a.bytes - b.bytes) * per) / count),
    };
  }
  return scaled;
}

/** Only the tables whose rows or bytes are not 0 (the rest say nothing). */
export function nonZero(sizes: TableSizes): TableSizes {
  return Object.fromEntries(Object.entries(sizes).filter(([, s]) => s.rows !== 0 || s.bytes !== 0));
}

/** Sum of every table's bytes. */
export const totalBytes = (sizes: TableSizes): number =>
  Object.values(sizes).reduce((n, s) => n + s.bytes, 0);

/** `bytes` in MiB, 2 decimals. */
export const mib = (bytes: number): number => Number((bytes / 2 ** 20).toFixed(2));
