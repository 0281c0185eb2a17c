// Compares schema.prisma with a live database, so that a hand-written migration that disagrees with
// the schema fails a test instead of a query in production. The schema side is Prisma's own DMMF,
// computed offline by the prisma-schema wasm module that ships inside the `prisma` CLI package; both
// sides are reduced to the same Shape and compared.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from 'pg';

const DEFAULT_SCHEMA_PATH = fileURLToPath(new URL('./schema.prisma', import.meta.url));
// Prisma's names are not checked beyond PostgreSQL's identifier length: Prisma then truncates.
const MAX_IDENTIFIER = 63;
/** Default expression meaning "some database default, not compared" (dbgenerated, list defaults). */
const ANY_DEFAULT = '<any>';

interface Column {
  type: string;
  nullable: boolean;
  /** Normalized: null = none, 'CURRENT_TIMESTAMP', 'autoincrement', a literal's text, or ANY_DEFAULT. */
  default: string | null;
}
interface Index {
  kind: 'primary key' | 'unique index' | 'index';
  columns: string[];
  name: string | null;
}
interface ForeignKey {
  columns: string[];
  references: string;
  onDelete: string;
  onUpdate: string;
  name: string | null;
}
interface Table {
  columns: Map<string, Column>;
  indexes: Index[];
  foreignKeys: ForeignKey[];
}
interface Shape {
  tables: Map<string, Table>;
  enums: Map<string, string[]>;
}

/**
 * Lists every difference between schema.prisma and the database's current schema (tables, columns
 * with type/nullability/default, enums and their values, primary keys, unique and plain indexes by
 * column list and Prisma's default names, foreign keys with their actions). Empty means no drift.
 * Read-only: one short connection, closed in all cases. `_prisma_migrations` is ignored. Throws
 * when the schema does not parse or the database is unreachable.
 */
export async function findSchemaDrift(
  connectionString: string,
  options: { schemaPath?: string } = {},
): Promise<string[]> {
  const schemaPath = options.schemaPath ?? DEFAULT_SCHEMA_PATH;
  const expected = shapeFromDmmf(await getDmmf(schemaPath));
  const actual = await shapeFromDatabase(connectionString);
  return compareShapes(expected, actual);
}

// ---- schema side: DMMF from Prisma's wasm -----------------------------------------------------

interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: 'scalar' | 'enum' | 'object' | 'unsupported';
  type: string;
  isList: boolean;
  isRequired: boolean;
  isUpdatedAt: boolean;
  nativeType?: [string, string[]] | null;
  default?: unknown;
  relationFromFields?: string[];
  relationToFields?: string[];
  relationOnDelete?: string;
  relationOnUpdate?: string;
}
interface DmmfModel {
  name: string;
  dbName: string | null;
  fields: DmmfField[];
}
interface DmmfIndex {
  model: string;
  type: 'id' | 'unique' | 'normal' | 'fulltext';
  dbName?: string | null;
  fields: { name: string }[];
}
interface DmmfEnum {
  name: string;
  dbName?: string | null;
  values: { name: string; dbName: string | null }[];
}
interface Dmmf {
  models: DmmfModel[];
  enums: DmmfEnum[];
  indexes: DmmfIndex[];
}

// Just the WebAssembly API used here: the project's `lib` (ES2023, no DOM) does not declare it.
interface WasmTable {
  grow(delta: number): number;
  get(index: number): unknown;
  set(index: number, value: unknown): void;
}
interface WasmApi {
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(module: object, imports: Record<string, Record<string, unknown>>): Promise<{ exports: object }>;
  Module: { imports(module: object): { module: string; name: string }[] };
}
const WebAssemblyApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

interface SchemaWasm {
  memory: { buffer: ArrayBuffer };
  __wbindgen_externrefs: WasmTable;
  __wbindgen_malloc(size: number, align: number): number;
  __wbindgen_free(ptr: number, size: number, align: number): void;
  __externref_table_dealloc(index: number): void;
  __wbindgen_start(): void;
  get_dmmf(ptr: number, len: number): [number, number, number, number];
}
let schemaWasm: Promise<SchemaWasm> | undefined;

/**
 * Instantiates prisma_schema_build_bg.wasm (the `@prisma/prisma-schema-wasm` build inside the
 * installed `prisma` package, the code `prisma generate` runs for getDMMF) with the four host
 * functions of its wasm-bindgen glue. Their names carry a hash, so they are matched by prefix; an
 * unknown import means a Prisma upgrade changed the ABI, and fails loudly here.
 */
async function loadSchemaWasm(): Promise<SchemaWasm> {
  const cliDir = path.dirname(createRequire(import.meta.url).resolve('prisma/package.json'));
  const module = await WebAssemblyApi.compile(
    await readFile(path.join(cliDir, 'build/prisma_schema_build_bg.wasm')),
  );
  const state: { wasm?: SchemaWasm } = {};
  const text = (ptr: number, len: number) =>
    new TextDecoder('utf-8', { fatal: true }).decode(
      new Uint8Array(state.wasm!.memory.buffer, ptr >>> 0, len),
    );
  const host: Record<string, (ptr: number, len: number) => unknown> = {};
  for (const { module: from, name } of WebAssemblyApi.Module.imports(module)) {
    if (from === '__wbindgen_placeholder__' && name.startsWith('__wbg_set_message_')) {
      host[name] = () => undefined; // panic text for Prisma's CLI registry; the thrown error has it too
    } else if (from === '__wbindgen_placeholder__' && name.startsWith('__wbg_Error_')) {
      host[name] = (ptr, len) => new Error(text(ptr, len));
    } else if (from === '__wbindgen_placeholder__' && name.startsWith('__wbg___wbindgen_throw_')) {
      host[name] = (ptr, len) => {
        throw new Error(text(ptr, len));
      };
    } else if (from === '__wbindgen_placeholder__' && name === '__wbindgen_init_externref_table') {
      host[name] = () => {
        const table = state.wasm!.__wbindgen_externrefs;
        const base = table.grow(4);
        table.set(0, undefined);
        [undefined, null, true, false].forEach((value, i) => table.set(base + i, value));
      };
    } else {
      throw new Error(`unsupported prisma-schema wasm import ${from}.${name}: update prisma/drift.ts`);
    }
  }
  const instance = await WebAssemblyApi.instantiate(module, { __wbindgen_placeholder__: host });
  state.wasm = instance.exports as SchemaWasm;
  state.wasm.__wbindgen_start();
  return state.wasm;
}

async function getDmmf(schemaPath: string): Promise<Dmmf> {
  const w = await (schemaWasm ??= loadSchemaWasm());
  const input = new TextEncoder().encode(
    JSON.stringify({ prismaSchema: [[schemaPath, await readFile(schemaPath, 'utf8')]], noColor: true }),
  );
  const ptr = w.__wbindgen_malloc(input.length, 1) >>> 0;
  new Uint8Array(w.memory.buffer).set(input, ptr);
  const [outPtr, outLen, errorIndex, failed] = w.get_dmmf(ptr, input.length);
  if (failed) {
    const error = w.__wbindgen_externrefs.get(errorIndex);
    w.__externref_table_dealloc(errorIndex);
    const detail = validationMessage(error instanceof Error ? error.message : String(error));
    throw new Error(`${schemaPath} does not validate: ${detail}`, { cause: error });
  }
  const json = new TextDecoder().decode(new Uint8Array(w.memory.buffer, outPtr >>> 0, outLen));
  w.__wbindgen_free(outPtr, outLen, 1);
  return (JSON.parse(json) as { datamodel: Dmmf }).datamodel;
}

/** Prisma reports validation errors as JSON `{ error_code, message }`; show the message. */
function validationMessage(raw: string): string {
  try {
    const parsed = JSON.parse(raw) as { message?: unknown };
    return typeof parsed.message === 'string' ? parsed.message : raw;
  } catch {
    return raw;
  }
}

// Prisma's PostgreSQL column types, spelled as format_type() prints them.
const SCALAR_TYPES: Record<string, string> = {
  String: 'text',
  Int: 'integer',
  BigInt: 'bigint',
  Float: 'double precision',
  Decimal: 'numeric(65,30)',
  Boolean: 'boolean',
  DateTime: 'timestamp(3) without time zone',
  Json: 'jsonb',
  Bytes: 'bytea',
};
const NATIVE_TYPES: Record<string, (args: string[]) => string> = {
  Text: () => 'text',
  VarChar: (a) => (a[0] ? `character varying(${a[0]})` : 'character varying'),
  Char: (a) => `character(${a[0] ?? 1})`,
  Uuid: () => 'uuid',
  SmallInt: () => 'smallint',
  Integer: () => 'integer',
  BigInt: () => 'bigint',
  Real: () => 'real',
  DoublePrecision: () => 'double precision',
  Decimal: (a) => (a.length ? `numeric(${a.join(',')})` : 'numeric'),
  Money: () => 'money',
  Boolean: () => 'boolean',
  Date: () => 'date',
  Timestamp: (a) => `timestamp${a[0] ? `(${a[0]})` : ''} without time zone`,
  Timestamptz: (a) => `timestamp${a[0] ? `(${a[0]})` : ''} with time zone`,
  Time: (a) => `time${a[0] ? `(${a[0]})` : ''} without time zone`,
  Timetz: (a) => `time${a[0] ? `(${a[0]})` : ''} with time zone`,
  Json: () => 'json',
  JsonB: () => 'jsonb',
  ByteA: () => 'bytea',
  Xml: () => 'xml',
  Inet: () => 'inet',
  Citext: () => 'citext',
  Oid: () => 'oid',
  Bit: (a) => `bit(${a[0] ?? 1})`,
  VarBit: (a) => (a[0] ? `bit varying(${a[0]})` : 'bit varying'),
};

function shapeFromDmmf(dmmf: Dmmf): Shape {
  const tableOf = (modelName: string) => {
    const model = dmmf.models.find((m) => m.name === modelName);
    if (!model) throw new Error(`DMMF names unknown model ${modelName}`);
    return { table: model.dbName ?? model.name, model };
  };
  const columnOf = (model: DmmfModel, fieldName: string) => {
    const field = model.fields.find((f) => f.name === fieldName);
    return field?.dbName ?? fieldName;
  };
  const enums = new Map(dmmf.enums.map((e) => [e.dbName ?? e.name, e.values.map((v) => v.dbName ?? v.name)]));
  const tables = new Map<string, Table>();
  for (const model of dmmf.models) {
    const table = model.dbName ?? model.name;
    const columns = new Map<string, Column>();
    const foreignKeys: ForeignKey[] = [];
    for (const field of model.fields) {
      if (field.kind === 'object') {
        if (!field.relationFromFields?.length) continue;
        const target = tableOf(field.type);
        const from = field.relationFromFields.map((f) => columnOf(model, f));
        const optional = field.relationFromFields.some(
          (f) => !model.fields.find((x) => x.name === f)?.isRequired,
        );
        foreignKeys.push({
          columns: from,
          references: `${target.table}(${(field.relationToFields ?? []).map((f) => columnOf(target.model, f)).join(', ')})`,
          onDelete: field.relationOnDelete ?? (optional ? 'SetNull' : 'Restrict'),
          onUpdate: field.relationOnUpdate ?? 'Cascade',
          // The DMMF drops @relation(map: …): a custom foreign key name would show up as a rename.
          name: prismaName(`${table}_${from.join('_')}_fkey`),
        });
        continue;
      }
      const enumType = field.kind === 'enum' ? dmmf.enums.find((e) => e.name === field.type) : undefined;
      const base = enumType
        ? (enumType.dbName ?? enumType.name)
        : field.nativeType
          ? (NATIVE_TYPES[field.nativeType[0]]?.(field.nativeType[1]) ?? field.nativeType[0].toLowerCase())
          : (SCALAR_TYPES[field.type] ?? field.type);
      columns.set(field.dbName ?? field.name, {
        type: field.isList ? `${base}[]` : base,
        nullable: field.isList || !field.isRequired,
        default: expectedDefault(field, enumType),
      });
    }
    const indexes = dmmf.indexes
      .filter((i) => i.model === model.name && i.type !== 'fulltext')
      .map((i): Index => {
        const cols = i.fields.map((f) => columnOf(model, f.name));
        const [kind, suffix] =
          i.type === 'id'
            ? (['primary key', 'pkey'] as const)
            : i.type === 'unique'
              ? (['unique index', 'key'] as const)
              : (['index', 'idx'] as const);
        const name =
          i.dbName ?? (kind === 'primary key' ? `${table}_pkey` : `${table}_${cols.join('_')}_${suffix}`);
        return { kind, columns: cols, name: prismaName(name) };
      });
    tables.set(table, { columns, indexes, foreignKeys });
  }
  return { tables, enums };
}

function expectedDefault(field: DmmfField, enumType: DmmfEnum | undefined): string | null {
  const value = field.default;
  if (value === undefined || value === null || field.isUpdatedAt) return null;
  if (Array.isArray(value)) return ANY_DEFAULT;
  if (typeof value === 'object') {
    const fn = (value as { name: string; args: unknown[] }).name;
    if (fn === 'now') return 'CURRENT_TIMESTAMP';
    if (fn === 'autoincrement') return 'autoincrement';
    if (fn === 'dbgenerated') return ANY_DEFAULT;
    return null; // uuid(), cuid(), nanoid(), ulid(): generated by Prisma Client, not by the database
  }
  const literal = typeof value === 'string' ? value : JSON.stringify(value);
  if (enumType) return enumType.values.find((v) => v.name === value)?.dbName ?? literal;
  return literal;
}

function prismaName(name: string): string | null {
  return name.length <= MAX_IDENTIFIER ? name : null;
}

// ---- database side: pg_catalog -----------------------------------------------------------------

const COLUMNS_SQL = `
SELECT c.relname AS table, a.attname AS column, NOT a.attnotnull AS nullable,
       CASE WHEN et.typtype = 'e' THEN et.typname || CASE WHEN t.typcategory = 'A' THEN '[]' ELSE '' END
            ELSE format_type(a.atttypid, a.atttypmod) END AS type,
       pg_get_expr(d.adbin, d.adrelid) AS default
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_type t ON t.oid = a.atttypid
JOIN pg_type et ON et.oid = CASE WHEN t.typcategory = 'A' THEN t.typelem ELSE t.oid END
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum`;

const INDEXES_SQL = `
SELECT tc.relname AS table, ic.relname AS name, ix.indisprimary AS primary, ix.indisunique AS unique,
       (ix.indexprs IS NOT NULL OR ix.indpred IS NOT NULL) AS special,
       ARRAY(SELECT a.attname FROM unnest(ix.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum
             WHERE k.ord <= ix.indnkeyatts ORDER BY k.ord)::text[] AS columns
FROM pg_index ix
JOIN pg_class tc ON tc.oid = ix.indrelid
JOIN pg_class ic ON ic.oid = ix.indexrelid
JOIN pg_namespace n ON n.oid = tc.relnamespace
WHERE n.nspname = current_schema() AND tc.relkind IN ('r', 'p')`;

const FOREIGN_KEYS_SQL = `
SELECT tc.relname AS table, con.conname AS name, rc.relname AS ref_table,
       con.confdeltype AS on_delete, con.confupdtype AS on_update,
       ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.ord)::text[] AS columns,
       ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.ord)::text[] AS ref_columns
FROM pg_constraint con
JOIN pg_class tc ON tc.oid = con.conrelid
JOIN pg_class rc ON rc.oid = con.confrelid
JOIN pg_namespace n ON n.oid = tc.relnamespace
WHERE con.contype = 'f' AND n.nspname = current_schema()`;

const ENUMS_SQL = `
SELECT t.typname AS name, array_agg(e.enumlabel ORDER BY e.enumsortorder)::text[] AS values
FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname = current_schema() GROUP BY t.typname`;

const ACTIONS: Record<string, string> = {
  a: 'NoAction',
  r: 'Restrict',
  c: 'Cascade',
  n: 'SetNull',
  d: 'SetDefault',
};

async function shapeFromDatabase(connectionString: string): Promise<Shape> {
  const client = new Client({ connectionString });
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
      // Expression and partial indexes cannot be expressed in schema.prisma: mark them so they show up.
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

// ---- comparison -----------------------------------------------------------------------------------

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
          drift.push(`enum ${name}: value '${v}' exists in the database but not in schema.prisma`);
    }
  }
  for (const name of actual.enums.keys()) {
    if (!expected.enums.has(name)) drift.push(`enum ${name} exists in the database but not in schema.prisma`);
  }
  for (const [name, table] of expected.tables) {
    const live = actual.tables.get(name);
    if (live) drift.push(...compareTables(name, table, live));
    else drift.push(`table ${name} is missing from the database`);
  }
  for (const name of actual.tables.keys()) {
    if (!expected.tables.has(name))
      drift.push(`table ${name} exists in the database but no model in schema.prisma maps to it`);
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
        `column ${table}.${name}: type is ${have.type} in the database, schema.prisma expects ${want.type}`,
      );
    if (have.nullable !== want.nullable) {
      drift.push(
        `column ${table}.${name}: ${have.nullable ? 'nullable' : 'NOT NULL'} in the database, schema.prisma expects ${want.nullable ? 'nullable' : 'NOT NULL'}`,
      );
    }
    const sameDefault = want.default === ANY_DEFAULT ? have.default !== null : have.default === want.default;
    if (!sameDefault)
      drift.push(
        `column ${table}.${name}: default is ${have.default ?? 'none'} in the database, schema.prisma expects ${want.default ?? 'none'}`,
      );
  }
  for (const name of actual.columns.keys()) {
    if (!expected.columns.has(name))
      drift.push(`column ${table}.${name} exists in the database but not in schema.prisma`);
  }
  const indexKey = (i: Index) => `${i.kind} on ${table}(${i.columns.join(', ')})`;
  drift.push(...compareNamed(expected.indexes, actual.indexes, indexKey, () => []));
  const fkKey = (f: ForeignKey) => `foreign key ${table}(${f.columns.join(', ')}) -> ${f.references}`;
  drift.push(
    ...compareNamed(expected.foreignKeys, actual.foreignKeys, fkKey, (want, have) =>
      want.onDelete !== have.onDelete || want.onUpdate !== have.onUpdate
        ? [
            `${fkKey(want)}: ON DELETE ${have.onDelete} ON UPDATE ${have.onUpdate} in the database, schema.prisma expects ON DELETE ${want.onDelete} ON UPDATE ${want.onUpdate}`,
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
      drift.push(`${key(have)} (${have.name}) exists in the database but not in schema.prisma`);
  }
  return drift;
}
