// The layer order (eslint/layers.js) holds, and the imports have no circles: pure, no services.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { LAYERS, layersConfig, upwardImport } from '../eslint/layers.js';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { circles, importGraph, sourceFiles } from './helpers/import-graph.ts';

const LAYER_FOLDERS = LAYERS.flat();

/** The layer rule's problems in `code`, linted as the repository file `file`. */
async function upwardImportsIn(file: string, code: string): Promise<string[]> {
  const eslint = new ESLint({
    cwd: PROJECT_ROOT,
    overrideConfigFile: true,
    overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, layersConfig],
  });
  const [result] = await eslint.lintText(code, { filePath: path.join(PROJECT_ROOT, file) });
  assert.ok(result);
  for (const m of result.messages) assert.equal(m.ruleId, 'layers/import-order', m.message);
  return result.messages.map((m) => `${m.line}: ${m.message}`);
}

describe('layers', () => {
  it('layers: every top-level folder that holds TypeScript is in the ordered list', () => {
    const folders = readdirSync(PROJECT_ROOT, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules')
      .map((e) => e.name)
      .filter((name) => sourceFiles(PROJECT_ROOT, [name]).length > 0);
    assert.deepEqual(
      folders.filter((f) => !LAYER_FOLDERS.includes(f)),
      [],
      'a folder outside eslint/layers.js escapes the layer rule',
    );
  });

  it('layers: a planted upward import fails the lint, type-only and dynamic imports included', async () => {
    const problems = await upwardImportsIn(
      'db/planted.ts',
      [
        "import { startFetch } from '../client/index.ts';",
        "import type { fetchRecordsWorkflow } from '../workflows/fetch-records.ts';",
        "export { main } from '../cli/main.ts';",
        "export const later = () => import('../worker/boot.ts');",
        'export type T = typeof startFetch | typeof fetchRecordsWorkflow;',
      ].join('\n'),
    );
    assert.equal(problems.length, 4, problems.join('\n'));
    assert.match(problems[0]!, /^1: db\/planted\.ts may not import client\/index\.ts/);
    assert.match(problems[3]!, /^4: .*worker\/boot\.ts/);
  });

  it('layers: the contract may import nothing of the project above it', async () => {
    const problems = await upwardImportsIn(
      'contract/planted.ts',
      "import { redact } from '../runtime/redact.ts';",
    );
    assert.equal(problems.length, 1, problems.join('\n'));
  });

  it('layers: imports down the list and within a layer pass', async () => {
    const problems = await upwardImportsIn(
      'client/planted.ts',
      [
        "import { isLive } from '../db/fence.ts';",
        "import { parseWorkflowId } from '../contract/business-key.ts';",
        "import { startFetch } from './index.ts';",
        "import pg from 'pg';",
        'export const all = [isLive, parseWorkflowId, startFetch, pg];',
      ].join('\n'),
    );
    assert.deepEqual(problems, []);
  });

  it('layers: no file of the repository imports a higher layer', () => {
    const graph = importGraph(PROJECT_ROOT, sourceFiles(PROJECT_ROOT, LAYER_FOLDERS));
    const upward = [...graph].flatMap(([file, targets]) =>
      targets.filter((t) => upwardImport(file, `./${path.posix.relative(path.posix.dirname(file), t)}`)),
    );
    assert.ok(graph.size > 200, `only ${graph.size} files read`);
    assert.deepEqual(upward, []);
  });

  it('layers: the imports have no circles', () => {
    const graph = importGraph(PROJECT_ROOT, sourceFiles(PROJECT_ROOT, LAYER_FOLDERS));
    assert.deepEqual(circles(graph), []);
  });

  it('layers: the circle finder finds a planted circle and nothing else', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts', 'd.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['e.ts']],
      ['e.ts', []],
      ['f.ts', ['f.ts']],
    ]);
    assert.deepEqual(circles(graph), [['a.ts', 'b.ts', 'c.ts'], ['f.ts']]);
  });
});
