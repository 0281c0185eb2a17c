// The ESLint rules that guard correctness, checked against code that breaks them: workflow code
// must stay deterministic (no Node/Prisma/activity imports), no promise may float, runtime SQL
// lives in db/ only, and imports point down the layer list (eslint/layers.js).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import { PROJECT_ROOT } from '../runtime/config.ts';

const eslint = new ESLint({ cwd: PROJECT_ROOT });

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

const WORKFLOW_FILE = 'workflows/fetch-records.ts';

void describe('lint rules', () => {
  void it('a workflow file may not import Node, Prisma or activity code', async () => {
    for (const spec of [
      'node:fs',
      '@prisma/client',
      '../activities/pages/store-page.ts',
      '@temporalio/activity',
      'pg',
    ]) {
      const ids = await ruleIds(`import * as m from '${spec}';\nexport const x = m;\n`, WORKFLOW_FILE);
      assert.ok(
        ids.includes('@typescript-eslint/no-restricted-imports'),
        `${spec} must be refused, got ${ids.join()}`,
      );
    }
  });

  void it('a workflow file may import @temporalio/workflow, other workflow files, the contract and activity types', async () => {
    const code = [
      "import { sleep } from '@temporalio/workflow';",
      "import { workflowIdFor } from '../contract/business-key.ts';",
      "import type { FetchActivities } from '../activities/index.ts';",
      'export type A = FetchActivities;',
      'export const x = [sleep, workflowIdFor];',
      '',
    ].join('\n');
    assert.deepEqual(await ruleIds(code, WORKFLOW_FILE), []);
  });

  void it('a floating promise is an error outside tests', async () => {
    const code = 'export async function f(): Promise<void> {}\nexport function g(): void {\n  f();\n}\n';
    assert.ok((await ruleIds(code, 'runtime/config.ts')).includes('@typescript-eslint/no-floating-promises'));
  });

  void it('raw SQL is refused in activities/ and worker/ and allowed in db/', async () => {
    const code = (method: string) =>
      [
        "import type { PrismaClient } from '../prisma/generated/client.ts';",
        `export const f = (db: PrismaClient) => db.${method}\`SELECT 1\`;`,
        '',
      ].join('\n');
    for (const method of ['$queryRaw', '$executeRaw']) {
      for (const file of [
        'activities/pages/store-page.ts',
        'client/health.ts',
        'worker/outbox/publisher.ts',
      ]) {
        assert.ok(
          (await ruleIds(code(method), file)).includes('no-restricted-syntax'),
          `${method} in ${file} must be refused`,
        );
      }
      assert.deepEqual(await ruleIds(code(method), 'db/fetch-run.ts'), []);
    }
    const unsafe = [
      "import type { PrismaClient } from '../prisma/generated/client.ts';",
      "export const f = (db: PrismaClient) => db.$executeRawUnsafe('SELECT 1');",
      '',
    ].join('\n');
    assert.ok((await ruleIds(unsafe, 'activities/run/claim-run.ts')).includes('no-restricted-syntax'));
  });

  void it('the configured lint refuses an import up the layer list, type-only included', async () => {
    for (const spec of [
      '../activities/errors.ts',
      '../jobs/index.ts',
      '../workflows/fetch-records.ts',
      '../client/index.ts',
      '../worker/worker.ts',
      '../cli/main.ts',
    ]) {
      for (const code of [
        `import * as m from '${spec}';\nexport const x = m;\n`,
        `import type * as m from '${spec}';\nexport type X = typeof m;\n`,
      ]) {
        const ids = await ruleIds(code, 'db/fence.ts');
        assert.ok(ids.includes('layers/import-order'), `${spec} must be refused in db/, got ${ids.join()}`);
      }
    }
    const down =
      "import { Prisma } from '../prisma/generated/client.ts';\nimport { redactUrlsIn } from '../runtime/redact.ts';\nexport const x = [Prisma, redactUrlsIn];\n";
    assert.deepEqual(await ruleIds(down, 'db/fence.ts'), []);
  });
});
