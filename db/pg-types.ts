/**
 * Values as the Prisma client returns them, for statements sent through node-postgres itself
 * (the CLI's reader, the engine's statements on a transaction's connection): node-postgres would
 * read a `date` or a `timestamp` in the process's local time zone, and leave a `bigint` as text.
 * Per connection or per query only: the process-wide parsers of `pg` stay untouched for everyone
 * else (Prisma's adapter among them).
 */
import type * as Pg from 'pg';

/** Type parsers for `pg`'s `types` option; `pg` is passed in so a caller may load it lazily. */
export function prismaTypes(pg: Pick<typeof Pg, 'TypeOverrides' | 'types'>): Pg.TypeOverrides {
  const types = new pg.TypeOverrides();
  const { DATE, TIMESTAMP, INT8 } = pg.types.builtins;
  types.setTypeParser(DATE, (text: string) => new Date(`${text}T00:00:00Z`));
  types.setTypeParser(TIMESTAMP, (text: string) => new Date(`${text.replace(' ', 'T')}Z`));
  types.setTypeParser(INT8, (text: string) => BigInt(text));
  return types;
}
