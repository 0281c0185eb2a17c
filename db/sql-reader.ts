/**
 * The one interface the read-only listings (db/listings.ts: `runs list`, `dlq list`) query
 * through, so each statement is written once and runs on either client: the app's PrismaClient
 * (library callers) or a plain node-postgres connection (the CLI, which then starts without
 * loading the Prisma runtime; see db/pg-reader.ts).
 */
import type { PrismaClient } from '../prisma/generated/client.ts';

/**
 * Runs one parameterized statement (`$1`, `$2`, …) and resolves with its rows. Whichever client
 * backs it, a row's values are what Prisma returns for the column: `date` and `timestamptz` as Date
 * (a date at UTC midnight), integers as number, `bigint` as BigInt, JSON parsed, enums as text.
 * Column names are the statement's own, so a listing aliases them to the model's field names.
 */
export interface SqlReader {
  query<Row>(text: string, values: readonly unknown[]): Promise<Row[]>;
}

/** A reader that holds a connection until closed. */
export interface SqlConnection extends SqlReader {
  /** Ends the connection, if one was opened. Never throws. */
  close(): Promise<void>;
}

/** What a listing reads from: the app's PrismaClient, or a reader such as the CLI's. */
export type ReadContext = { prisma: PrismaClient } | { sql: SqlReader };

/** The reader of `ctx`: its own, or one that runs the statement through Prisma's raw query API. */
export function readerOf(ctx: ReadContext): SqlReader {
  if ('sql' in ctx) return ctx.sql;
  const { prisma } = ctx;
  return { query: (text, values) => prisma.$queryRawUnsafe(text, ...values) };
}
