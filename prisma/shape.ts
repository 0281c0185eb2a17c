// The common form both sides of the drift check are reduced to: what the Prisma schema expects
// (schema-shape.ts) and what the database has (database-shape.ts), compared by drift.ts.

/** Default expression meaning "some database default, not compared" (dbgenerated, list defaults). */
export const ANY_DEFAULT = '<any>';

export interface Column {
  type: string;
  nullable: boolean;
  /** Normalized: null = none, 'CURRENT_TIMESTAMP', 'autoincrement', a literal's text, or ANY_DEFAULT. */
  default: string | null;
}
export interface Index {
  kind: 'primary key' | 'unique index' | 'index';
  columns: string[];
  name: string | null;
}
export interface ForeignKey {
  columns: string[];
  references: string;
  onDelete: string;
  onUpdate: string;
  name: string | null;
}
export interface Table {
  columns: Map<string, Column>;
  indexes: Index[];
  foreignKeys: ForeignKey[];
}
export interface Shape {
  tables: Map<string, Table>;
  enums: Map<string, string[]>;
}
