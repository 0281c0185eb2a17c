#!/usr/bin/env node
// Entry point of the `durable-fetch` command. It runs the compiled CLI (.build/cli/, see
// scripts/build-cli.ts) when that build matches the sources; otherwise it rebuilds it first, and
// when even that fails (e.g. a read-only checkout, or sources that do not compile) it runs the
// TypeScript sources through tsx, which reports any compile error against the source itself.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freshCliEntry } from './cli-build.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The module to run: the fresh build, a new build, or the sources. */
async function cliModule() {
  const entry = freshCliEntry(root);
  if (entry) return pathToFileURL(entry).href;
  const { register } = await import('tsx/esm/api');
  register();
  try {
    const { buildCli } = await import('../scripts/build-cli.ts');
    return pathToFileURL(await buildCli({ projectRoot: root })).href;
  } catch {
    return '../cli/main.ts';
  }
}

const cli = /** @type {typeof import('../cli/main.ts')} */ (await import(await cliModule()));
process.exitCode = await cli.main(process.argv);
