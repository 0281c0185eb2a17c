// The SQL rule (eslint/sql.js): runtime SQL only in db/ and prisma/. Planted snippets are linted
// with the rule's own config block, the one eslint.config.js uses, on the typescript-eslint parser
// without type information: Prisma's raw methods and raw SQL text are refused in every product
// folder, allowed in db/, and English prose is left alone. Pure: no services.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { LAYERS } from '../eslint/layers.js';
import { NO_SQL_FOLDERS, SQL_FOLDERS, SQL_RULE, sqlConfig, TOOL_FOLDERS } from '../eslint/sql.js';
import { PROJECT_ROOT } from '../runtime/config.ts';

const eslint = new ESLint({
  cwd: PROJECT_ROOT,
  overrideConfigFile: true,
  overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, sqlConfig],
});

/** The SQL rule's problems in `code`, linted as the repository file `file`: `line:column`. */
async function sqlProblems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(PROJECT_ROOT, file) });
  assert.ok(result);
  for (const m of result.messages) assert.equal(m.ruleId, 'no-restricted-syntax', m.message);
  return result.messages.map((m) => `${m.line}:${m.column}`);
}

const UNSAFE = "export const f = (db: any) => db.$queryRawUnsafe('SELECT 1');\n";
const RAW_STRING = "export const q = 'SELECT * FROM fetch_run';\n";
const TEMPLATE = [
  'export const q = (id: string) => `',
  "  UPDATE fetch_run SET status = 'cancelled' WHERE id = ${id}`;",
  '',
].join('\n');

void describe('sql rule', () => {
  void it('sql rule: $queryRawUnsafe in client/ is refused', async () => {
    assert.equal((await sqlProblems('client/x.ts', UNSAFE)).length, 2, 'the method and its SQL text');
    const method = 'export const f = (db: any, text: string) => db.$queryRawUnsafe(text);\n';
    assert.deepEqual(await sqlProblems('client/x.ts', method), ['1:45']);
  });

  void it('sql rule: a raw SQL string in worker/ is refused', async () => {
    assert.deepEqual(await sqlProblems('worker/x.ts', RAW_STRING), ['1:18']);
  });

  void it('sql rule: an SQL template literal in cli/ is refused', async () => {
    assert.deepEqual(await sqlProblems('cli/x.ts', TEMPLATE), ['1:34']);
  });

  void it('sql rule: the same in db/ and prisma/ is allowed', async () => {
    for (const file of ['db/x.ts', 'prisma/x.ts']) {
      for (const code of [UNSAFE, RAW_STRING, TEMPLATE]) assert.deepEqual(await sqlProblems(file, code), []);
    }
  });

  void it('sql rule: English messages and HTTP methods are not SQL', async () => {
    const code = [
      "export const a = 'Select a source';",
      "export const b = 'Delete the letter first';",
      "export const c = 'DELETE';",
      'export const d = `Update ${a} when ready`;',
      "export const e = 'SELECTED rows';",
      "export const f = 'see SELECT 1 in the log';",
      '',
    ].join('\n');
    assert.deepEqual(await sqlProblems('client/x.ts', code), []);
  });

  void it('sql rule: every way of reaching a raw method is refused, and every statement keyword', async () => {
    const code = [
      "export const a = (db: any) => db?.$executeRaw('x');",
      "export const b = (db: any) => db['$queryRawUnsafe']('x');",
      'export const c = (db: any) => db[`$executeRawUnsafe`]("x");',
      'export const d = ({ $queryRaw }: any) => $queryRaw;',
      "export const e = (db: any) => db.$executeRaw('x');",
      'export const f = (sql: any) => sql`',
      '  WITH t AS (SELECT 1) SELECT * FROM t`;',
      "export const g = '\\n  LOCK TABLE fetch_run';",
      '',
    ].join('\n');
    assert.equal((await sqlProblems('activities/x.ts', code)).length, 7);
    for (const keyword of ['INSERT', 'DELETE', 'CREATE', 'TRUNCATE', 'SET', 'BEGIN', 'ROLLBACK']) {
      const problems = await sqlProblems('jobs/x.ts', `export const q = '${keyword} x';\n`);
      assert.equal(problems.length, 1, keyword);
    }
  });

  void it('sql rule: the real config applies it to every product folder, and to none of db/, prisma/ and the tools', async () => {
    const config = new ESLint({ cwd: PROJECT_ROOT });
    assert.deepEqual(
      [...NO_SQL_FOLDERS, ...SQL_FOLDERS, ...TOOL_FOLDERS].sort(),
      LAYERS.flat().sort(),
      'every layer folder is placed',
    );
    for (const folder of LAYERS.flat()) {
      const resolved = (await config.calculateConfigForFile(path.join(PROJECT_ROOT, folder, 'x.ts'))) as {
        rules?: Record<string, unknown>;
      };
      const rule = resolved.rules?.['no-restricted-syntax'];
      if (NO_SQL_FOLDERS.includes(folder)) {
        assert.deepEqual(
          rule,
          SQL_RULE.map((o) => (o === 'error' ? 2 : o)),
        );
      } else {
        assert.equal(rule, undefined, `${folder}/ is exempt`);
      }
    }
  });
});
