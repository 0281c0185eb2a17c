// @ts-check
/**
 * One data-access layer (db/): every runtime SQL statement lives there, each invariant (the run
 * fence, the ledger's state sets) written once, so a statement is found, reviewed and changed in
 * one place. The rule refuses SQL in every other folder of the product, with no list of files let
 * off:
 * - Prisma's raw-statement methods (`$queryRaw`, `$executeRaw` and their `Unsafe` forms), however
 *   reached: `db.$queryRaw`, `db?.$queryRaw`, `db['$queryRawUnsafe']`, `const { $queryRaw } = db`;
 * - SQL text itself: a string or template literal whose text starts, after optional whitespace,
 *   with a statement keyword in upper case and then whitespace (`'SELECT 1'`, `` `UPDATE
 *   fetch_run SET …` ``), which is what a node-postgres `.query(...)` or any other driver is sent.
 *   The keyword must be upper case and followed by whitespace so that prose is left alone: 'Select
 *   a source', 'DELETE' (an HTTP method).
 *
 * db/ and prisma/ (the migrator, the drift check) are the layer that holds SQL. The tools' layer
 * (test/, bench/, scripts/, bin/) is exempt: tests and benchmarks set up and check the database
 * behind the product's back (planted rows, session settings, counted statements), which is their
 * job and must not go through the code they check; scripts/ (build, generate, install steps) and
 * bin/ (the CLI's launcher) are not the engine's data path and hold no SQL today. Nothing of the
 * product imports a tool (eslint/layers.js).
 *
 * Written as `no-restricted-syntax` selectors. This is the only block of eslint.config.js that
 * sets that rule for these folders: a later block that set it too would replace these selectors
 * (flat config merges a rule's options by replacing them), so add selectors here instead;
 * test/sql-rule.test.ts checks the config every layer folder resolves to.
 */
import { LAYERS } from './layers.js';

/** The folders that hold SQL: the data-access layer. */
export const SQL_FOLDERS = ['db', 'prisma'];

/** The tools' layer (the last of eslint/layers.js): exempt, see the module comment. */
export const TOOL_FOLDERS = LAYERS.at(-1) ?? [];

/** Every other layer folder: SQL is refused there. */
export const NO_SQL_FOLDERS = LAYERS.flat().filter(
  (f) => !SQL_FOLDERS.includes(f) && !TOOL_FOLDERS.includes(f),
);

/** Statement keywords that start SQL text (upper case, then whitespace). */
export const SQL_KEYWORDS = [
  'SELECT',
  'INSERT',
  'UPDATE',
  'DELETE',
  'WITH',
  'CREATE',
  'ALTER',
  'DROP',
  'TRUNCATE',
  'LOCK',
  'SET',
  'SHOW',
  'COPY',
  'VACUUM',
  'ANALYZE',
  'BEGIN',
  'COMMIT',
  'ROLLBACK',
];

// esquery regexes: no `/` and no `,` inside (its selector grammar would split on them).
const RAW_METHOD = '/^\\$(queryRaw|executeRaw)(Unsafe)?$/';
const SQL_TEXT = `/^\\s*(${SQL_KEYWORDS.join('|')})\\s/`;

const METHOD_MESSAGE =
  'Runtime SQL belongs in db/ (the data-access layer): add or reuse a function there (eslint/sql.js).';
const TEXT_MESSAGE =
  'This reads as SQL text: runtime SQL belongs in db/ (the data-access layer); add or reuse a function there (eslint/sql.js).';

/** The `no-restricted-syntax` options: one entry per selector. */
export const SQL_RULE_OPTIONS = [
  // db.$queryRaw`…`, tx.$executeRaw`…`, db?.$queryRawUnsafe(…)
  { selector: `MemberExpression[computed=false][property.name=${RAW_METHOD}]`, message: METHOD_MESSAGE },
  // db['$queryRawUnsafe'](…), db[`$executeRawUnsafe`](…)
  { selector: `MemberExpression[computed=true][property.value=${RAW_METHOD}]`, message: METHOD_MESSAGE },
  {
    selector: `MemberExpression[computed=true] > TemplateLiteral.property > TemplateElement[value.cooked=${RAW_METHOD}]`,
    message: METHOD_MESSAGE,
  },
  // const { $queryRawUnsafe } = db; ({ $executeRaw: run } = db)
  { selector: `ObjectPattern > Property[key.name=${RAW_METHOD}]`, message: METHOD_MESSAGE },
  { selector: `ObjectPattern > Property[key.value=${RAW_METHOD}]`, message: METHOD_MESSAGE },
  // 'SELECT 1', "DELETE FROM …"
  { selector: `Literal[value=${SQL_TEXT}]`, message: TEXT_MESSAGE },
  // `UPDATE fetch_run SET …`, sql`SELECT …`, `SELECT ${columns} FROM …`: the template's first part.
  { selector: `TemplateLiteral > TemplateElement:first-child[value.raw=${SQL_TEXT}]`, message: TEXT_MESSAGE },
];

/**
 * The `no-restricted-syntax` setting.
 * @type {['error', ...typeof SQL_RULE_OPTIONS]}
 */
export const SQL_RULE = ['error', ...SQL_RULE_OPTIONS];

/** The config block eslint.config.js uses: every no-SQL folder, no exceptions. */
export const sqlConfig = {
  files: NO_SQL_FOLDERS.flatMap((f) => [`${f}/**/*.ts`, `${f}/**/*.js`]),
  rules: { 'no-restricted-syntax': SQL_RULE },
};
