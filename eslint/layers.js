// @ts-check
/**
 * The project's layers, bottom to top, and the lint rule that keeps imports pointing down.
 *
 * A file may import files of its own layer and of the layers below it, never above: the contract
 * (ids, business key and date, error types, input limits, presets) imports nothing of the
 * project; the processes and the CLI sit on top. One list, so that where a folder belongs is
 * written once; docs/architecture.md draws it. Circles are caught by test/layers.test.ts.
 */
import path from 'node:path';

/** Bottom → top. Each entry is a layer: the top-level folders it holds. */
export const LAYERS = [
  // Pure contracts shared by every layer, workflow code included (so: sandbox-safe); and the demo
  // partner, a separate program that imports nothing of the engine.
  ['contract', 'partner'],
  // Process-wide runtime: configuration, errors, redaction, logging, metrics, periodic loops.
  ['runtime'],
  // The data-access layer: every runtime SQL statement, the Prisma client and the migrations.
  ['db', 'prisma'],
  // Activities (what a workflow step does) and jobs (what a job type fetches and stores).
  ['activities', 'jobs'],
  // Workflow code: deterministic, replayed inside Temporal's sandbox.
  ['workflows'],
  // The application client: start, signal, observe and cancel runs; operators' operations.
  ['client'],
  // Processes: the worker, the outbox publisher, the sweeps and the local stack of `npm start`.
  ['worker'],
  // The `durable-fetch` command line, and the package's job test kit (durable-fetch/testing).
  ['cli', 'testing'],
  // Tools around the product: tests, benchmarks, scripts, the CLI's launcher, the operations files
  // (the Grafana dashboard's generator); and the example application, its own package that imports
  // only the packed engine (test/example-app.test.ts).
  ['test', 'bench', 'scripts', 'bin', 'examples', 'ops'],
];

/**
 * The layer index of a repository path (`db/fence.ts`), or undefined outside every layer.
 * @param {string} repoPath
 */
export function layerOf(repoPath) {
  const top = repoPath.split('/')[0] ?? '';
  const index = LAYERS.findIndex((folders) => folders.includes(top));
  return index < 0 ? undefined : index;
}

/**
 * The layer a relative import from `fromFile` (a repository path) would reach over, or undefined
 * when the import is allowed: a package, a file of the same or a lower layer.
 * @param {string} fromFile
 * @param {string} specifier
 * @returns {{ from: string, to: string } | undefined}
 */
export function upwardImport(fromFile, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), specifier));
  const from = layerOf(fromFile);
  const to = layerOf(target);
  if (from === undefined || to === undefined || to <= from) return undefined;
  return { from: LAYERS[from]?.join('+') ?? '', to: target };
}

/** @type {import('eslint').Rule.RuleModule} */
const importOrder = {
  meta: {
    type: 'problem',
    docs: { description: 'Imports point down the layer list of eslint/layers.js, type imports included.' },
    schema: [],
    messages: {
      upward:
        '{{from}} may not import {{to}}: it sits in a higher layer (eslint/layers.js lists them bottom to top). Move what both need down a layer.',
    },
  },
  create(context) {
    const repoPath = path.relative(context.cwd, context.filename).split(path.sep).join('/');
    /** @param {import('estree').Node | null | undefined} source */
    const check = (source) => {
      if (!source || source.type !== 'Literal' || typeof source.value !== 'string') return;
      const upward = upwardImport(repoPath, source.value);
      if (upward)
        context.report({ node: source, messageId: 'upward', data: { from: repoPath, to: upward.to } });
    };
    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
      // `import('../x.ts').Type` in a type position.
      TSImportType: (/** @type {import('estree').Node & { source?: import('estree').Node }} */ node) =>
        check(node.source),
      // `require.resolve('../workflows/index.ts')`: the worker hands workflow files to the bundler.
      CallExpression: (node) => {
        const callee = node.callee;
        if (
          callee.type === 'MemberExpression' &&
          callee.object.type === 'Identifier' &&
          callee.object.name === 'require' &&
          callee.property.type === 'Identifier' &&
          callee.property.name === 'resolve'
        ) {
          const [first] = node.arguments;
          if (first && first.type !== 'SpreadElement') check(first);
        }
      },
    };
  },
};

export const layersPlugin = { rules: { 'import-order': importOrder } };

/**
 * The config block: every file of every layer, no exceptions.
 * @type {import('eslint').Linter.Config}
 */
export const layersConfig = {
  files: ['**/*.ts', '**/*.js'],
  plugins: { layers: layersPlugin },
  rules: { 'layers/import-order': 'error' },
};
