// The schema side of the drift check: Prisma's DMMF reduced to the Shape that `prisma migrate` would
// create in PostgreSQL (types as format_type() prints them, Prisma's default constraint names).
import { type Column, type ForeignKey, type Index, type Shape, type Table, ANY_DEFAULT } from './shape.ts';
import { type Dmmf, type DmmfEnum, type DmmfField, type DmmfModel } from './schema-wasm.ts';

// Prisma's names are not checked beyond PostgreSQL's identifier length: Prisma then truncates.
const MAX_IDENTIFIER = 63;

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

/**
 * The tables, columns, indexes, foreign keys and enums that the Prisma schema expects, by database name.
 * Pure. Names longer than PostgreSQL's identifier limit become null (not compared). Throws when a
 * relation names a model the DMMF does not contain.
 */
export function shapeFromDmmf(dmmf: Dmmf): Shape {
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
