/**
 * `npm run build` (and part of postinstall): compiles the CLI (cli/main.ts) to JavaScript in
 * .build/cli/, so `durable-fetch` starts without transpiling TypeScript. Packages stay external
 * (loaded from node_modules as usual), except BUNDLED_PACKAGES; dynamic imports become chunks, so a
 * command loads only its own code. bin/cli-build.js decides at each start whether the build still
 * matches its sources.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { cliBuildPaths, type CliManifest, MANIFEST_VERSION } from '../bin/cli-build.js';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Builds other than the current one are removed once this old: a process may still load their chunks. */
const OLD_BUILD_MS = 24 * 60 * 60 * 1000;
/**
 * Packages compiled into the CLI instead of loaded from node_modules at run time (their files are
 * inputs of the build like the sources, so an upgrade rebuilds it). Every command validates its
 * configuration with zod, whose ESM build is ~235 modules (every locale among them): loading them
 * one by one took about 0.1 s of every start on the 2-core machine. Bundled, they are a few chunks,
 * and the part the configuration uses (zod/mini) a small one of its own.
 */
const BUNDLED_PACKAGES: ReadonlySet<string> = new Set(['zod']);
/** Inputs esbuild reads without going through the loader below, plus this file (the build's recipe). */
const CONFIG_INPUTS = ['package.json', 'tsconfig.json', 'scripts/build-cli.ts', 'bin/cli-build.js'];

type Stat = [string, number, number];

async function statOf(root: string, file: string): Promise<Stat> {
  const s = await stat(path.join(root, file));
  return [file, s.mtimeMs, s.size];
}

/**
 * Loads every project source itself, recording its stat before reading it (an edit made while the
 * build runs therefore leaves the build stale), and replaces `import.meta.url` with the source
 * file's own URL: modules that find files next to them (migrations, SQL, the workflow sources
 * Temporal bundles, the generated Prisma client) keep resolving them in the source tree.
 */
function sourcesPlugin(root: string, inputs: Map<string, Stat>): esbuild.Plugin {
  return {
    name: 'durable-fetch-sources',
    setup(build) {
      build.onLoad({ filter: /\.(ts|js|json)$/ }, async (args) => {
        const rel = path.relative(root, args.path);
        inputs.set(rel, await statOf(root, rel));
        const text = await readFile(args.path, 'utf8');
        const loader = args.path.endsWith('.json') ? 'json' : args.path.endsWith('.js') ? 'js' : 'ts';
        const url = JSON.stringify(pathToFileURL(args.path).href);
        return { contents: text.replaceAll('import.meta.url', url), loader };
      });
    },
  };
}

/** Leaves every package external (loaded from node_modules as usual) but {@link BUNDLED_PACKAGES}. */
function externalPackagesPlugin(): esbuild.Plugin {
  return {
    name: 'durable-fetch-external-packages',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        const name = args.path.startsWith('@') ? args.path.split('/', 2).join('/') : args.path.split('/')[0];
        return name && BUNDLED_PACKAGES.has(name) ? undefined : { path: args.path, external: true };
      });
    },
  };
}

/** Options for {@link buildCli}. */
export interface BuildCliOptions {
  /** Checkout to build; default this repository. */
  projectRoot?: string;
}

/**
 * Builds the CLI and publishes it: the output goes to a private temporary directory, is renamed to
 * a directory named by its content hash, and only then the manifest pointing at it is replaced
 * (write + rename), so a concurrent start sees the old build or the new one, never half of one,
 * and several processes building at once all succeed. Resolves with the entry module's path.
 * Throws esbuild's error when the sources do not compile.
 */
export async function buildCli(options: BuildCliOptions = {}): Promise<string> {
  const root = options.projectRoot ?? PROJECT_ROOT;
  const { base, manifest } = cliBuildPaths(root);
  const config = await Promise.all(CONFIG_INPUTS.map((f) => statOf(root, f)));
  const inputs = new Map<string, Stat>();
  await mkdir(base, { recursive: true });
  const tmp = path.join(base, `tmp-${process.pid}-${Date.now()}`);
  try {
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: { cli: 'cli/main.ts' },
      outdir: tmp,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: 'linked',
      chunkNames: 'chunk-[hash]',
      logLevel: 'silent',
      write: true,
      plugins: [externalPackagesPlugin(), sourcesPlugin(root, inputs)],
    });
    if (result.errors.length > 0) throw new Error(`esbuild failed: ${result.errors[0]?.text}`);
    const dir = await contentId(tmp);
    await rename(tmp, path.join(base, dir)).catch(async (err: NodeJS.ErrnoException) => {
      // Another process published the same content first.
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
      await rm(tmp, { recursive: true, force: true });
    });
    const record: CliManifest = {
      version: MANIFEST_VERSION,
      root,
      dir,
      inputs: [...config, ...[...inputs.values()].sort((a, b) => a[0].localeCompare(b[0]))],
    };
    const next = `${manifest}.${process.pid}-${Date.now()}`;
    await writeFile(next, `${JSON.stringify(record)}\n`);
    await rename(next, manifest);
    await removeOldBuilds(base, dir);
    return path.join(base, dir, 'cli.js');
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** A short hash of every output file's name and content. */
async function contentId(dir: string): Promise<string> {
  const hash = createHash('sha256');
  for (const name of (await readdir(dir)).sort()) {
    hash
      .update(name)
      .update('\0')
      .update(await readFile(path.join(dir, name)));
  }
  return hash.digest('hex').slice(0, 16);
}

async function removeOldBuilds(base: string, current: string): Promise<void> {
  const now = Date.now();
  for (const entry of await readdir(base, { withFileTypes: true })) {
    if (entry.name === current || entry.name === 'manifest.json') continue;
    const file = path.join(base, entry.name);
    const s = await stat(file).catch(() => undefined);
    if (s && now - s.mtimeMs > OLD_BUILD_MS) await rm(file, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const entry = await buildCli();
  console.log(`[durable-fetch] CLI built: ${path.relative(PROJECT_ROOT, entry)}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
