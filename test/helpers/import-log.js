// Preloaded with `node --import ./test/helpers/import-log.js …`: appends the URL of every module
// the process resolves through ESM (one per line) to the file named by DF_IMPORT_LOG, so a test can
// see which packages a command loaded. The same file is the hooks module, run on node's hooks thread.
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import process from 'node:process';
import { isMainThread } from 'node:worker_threads';

/** @type {string | undefined} */
let logFile;

/** @param {{ file: string }} data */
export function initialize(data) {
  logFile = data.file;
}

/**
 * @param {string} specifier
 * @param {unknown} context
 * @param {(specifier: string, context: unknown) => Promise<{ url: string }>} next
 */
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (logFile) appendFileSync(logFile, `${result.url}\n`);
  return result;
}

if (isMainThread && process.env.DF_IMPORT_LOG) {
  register(import.meta.url, { data: { file: process.env.DF_IMPORT_LOG } });
}
