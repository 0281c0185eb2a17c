// Compares the Prisma schema (every *.prisma file of prisma/schema/: the engine's and each job's)
// with a live database, so that a hand-written migration that disagrees with the schema fails a
// test instead of a query in production. The schema side is Prisma's own DMMF, computed offline by
// the prisma-schema wasm module that ships inside the `prisma` CLI package; both sides are reduced
// to the same Shape and compared.
import { fileURLToPath } from 'node:url';
import { shapeFromDatabase } from './database-shape.ts';
import { getDmmf } from './schema-wasm.ts';
import { shapeFromDmmf } from './schema-shape.ts';
import { type ForeignKey, type Index, type Shape, type Table, ANY_DEFAULT } from './shape.ts';

/** The schema folder prisma.config.ts names: the engine's models and every job's. */
export const DEFAULT_SCHEMA_PATH = fileURLToPath(new URL('./schema', import.meta.url));

/**
 * Lists every difference between the Prisma schema at `schemaPath` (a folder, all of its `*.prisma`
 * files, or one file; default prisma/schema/) and the database's current schema (tables, columns
 * with type/nullability/default, enums and their values, primary keys, unique and plain indexes by
 * column list and Prisma's default names, foreign keys with their actions). Empty means no drift.
 * Read-only: one short connection, closed in all cases. `_prisma_migrations` is ignored. `schema`
 * is the PostgreSQL schema compared (default the engine's, contract/engine-schema.ts). Throws
 * when the schema does not parse or the database is unreachable.
 */
export async function findSchemaDrift(
  connectionString: string,
  options: { schemaPath?: string; schema?: string } = {},
): Promise<string[]> {
  const schemaPath = options.schemaPath ?? DEFAULT_SCHEMA_PATH;
  const expected = shapeFromDmmf(await getDmmf(schemaPath));
  const actual = await shapeFromDatabase(connectionString, options.schema);
  return compareShapes(expected, actual);
}

function compareShapes(expected: Shape, actual: Shape): string[] {
  const drift: string[] = [];
  for (const [name, values] of expected.enums) {
    const live = actual.enums.get(name);
    if (!live) drift.push(`enum ${name} is missing from the database`);
    else {
      for (const v of values)
        if (!live.includes(v)) drift.push(`enum ${name}: value '${v}' is missing from the database`);
      for (const v of live)
        if (!values.includes(v))
          drift.push(`enum ${name}: value '${v}' exists in the database but not in the Prisma schema`);
    }
  }
  for (const name of actual.enums.keys()) {
    if (!expected.enums.has(name))
      drift.push(`enum ${name} exists in the database but not in the Prisma schema`);
  }
  for (const [name, table] of expected.tables) {
    const live = actual.tables.get(name);
    if (live) drift.push(...compareTables(name, table, live));
    else drift.push(`table ${name} is missing from the database`);
  }
  for (const name of actual.tables.keys()) {
    if (!expected.tables.has(name))
      drift.push(`table ${name} exists in the database but no model in the Prisma schema maps to it`);
  }
  return drift;
}

function compareTables(table: string, expected: Table, actual: Table): string[] {
  const drift: string[] = [];
  for (const [name, want] of expected.columns) {
    const have = actual.columns.get(name);
    if (!have) {
      drift.push(`column ${table}.${name} is missing from the database`);
      continue;
    }
    if (have.type !== want.type)
      drift.push(
        `column ${table}.${name}: type is ${have.type} in the database, the Prisma schema expects ${want.type}`,
      );
    if (have.nullable !== want.nullable) {
      drift.push(
        `column ${table}.${name}: ${have.nullable ? 'nullable' : 'NOT NULL'} in the database, the Prisma schema expects ${want.nullable ? 'nullable' : 'NOT NULL'}`,
      );
    }
    const sameDefault = want.default === ANY_DEFAULT ? have.default !== null : have.default === want.default;
    if (!sameDefault)
      drift.push(
        `column ${table}.${name}: default is ${have.default ?? 'none'} in the database, the Prisma schema expects ${want.default ?? 'none'}`,
      );
  }
  for (const name of actual.columns.keys()) {
    if (!expected.columns.has(name))
      drift.push(`column ${table}.${name} exists in the database but not in the Prisma schema`);
  }
  const indexKey = (i: Index) => `${i.kind} on ${table}(${i.columns.join(', ')})`;
  drift.push(...compareNamed(expected.indexes, actual.indexes, indexKey, () => []));
  const fkKey = (f: ForeignKey) => `foreign key ${table}(${f.columns.join(', ')}) -> ${f.references}`;
  drift.push(
    ...compareNamed(expected.foreignKeys, actual.foreignKeys, fkKey, (want, have) =>
      want.onDelete !== have.onDelete || want.onUpdate !== have.onUpdate
        ? [
            `${fkKey(want)}: ON DELETE ${have.onDelete} ON UPDATE ${have.onUpdate} in the database, the Prisma schema expects ON DELETE ${want.onDelete} ON UPDATE ${want.onUpdate}`,
          ]
        : [],
    ),
  );
  return drift;
}

function compareNamed<T extends { name: string | null }>(
  expected: T[],
  actual: T[],
  key: (item: T) => string,
  details: (want: T, have: T) => string[],
): string[] {
  const drift: string[] = [];
  const live = new Map(actual.map((item) => [key(item), item]));
  for (const want of expected) {
    const have = live.get(key(want));
    if (!have)
      drift.push(
        `${key(want)} is missing from the database${want.name ? ` (expected name ${want.name})` : ''}`,
      );
    else {
      if (want.name && have.name !== want.name)
        drift.push(`${key(want)} is named ${have.name} in the database, Prisma expects ${want.name}`);
      drift.push(...details(want, have));
    }
  }
  const wanted = new Set(expected.map(key));
  for (const have of actual) {
    if (!wanted.has(key(have)))
      drift.push(`${key(have)} (${have.name}) exists in the database but not in the Prisma schema`);
  }
  return drift;
}
