/**
 * `npm run generate` (and part of postinstall): generates the Prisma Client into prisma/generated.
 *
 * The Prisma CLI downloads its native schema engine even for `generate`, which does not need it.
 * Where that download is impossible (no route to binaries.prisma.sh), generation is retried with
 * PRISMA_SCHEMA_ENGINE_BINARY pointing at an existing file — only then, so machines with internet
 * access keep Prisma's normal path.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isUserFacingError, UserFacingError } from '../runtime/errors.ts';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Output that means "the engine could not be downloaded", as opposed to e.g. a schema error. */
const ENGINE_DOWNLOAD_FAILED = /binaries\.prisma\.sh|ENOTFOUND|EAI_AGAIN|getaddrinfo|ECONNREFUSED|ETIMEDOUT/;

/** Options for {@link generatePrismaClient}. */
export interface GenerateOptions {
  /** Checkout holding node_modules/.bin/prisma and prisma.config.ts; default this repository. */
  projectRoot?: string;
  /** Receives at most two short lines. */
  log?: (line: string) => void;
}

/**
 * Runs `prisma generate` (client into prisma/generated), quietly: Prisma's banner and update notice
 * are dropped and only the result line is logged. Idempotent; needs no database or network.
 * Resolves with `offline: true` when the schema-engine workaround was needed. Throws
 * `UserFacingError` code `PRISMA_GENERATE_FAILED` with Prisma's output when generation fails, and
 * `PRISMA_CLI_MISSING` when the `prisma` devDependency is not installed.
 */
export async function generatePrismaClient(options: GenerateOptions = {}): Promise<{ offline: boolean }> {
  const root = options.projectRoot ?? PROJECT_ROOT;
  const log = options.log ?? (() => {});
  const prisma = path.join(root, 'node_modules', '.bin', 'prisma');
  if (!existsSync(prisma)) {
    throw new UserFacingError(
      `${prisma} is missing: the Prisma CLI (devDependency "prisma") is needed to generate the client. ` +
        'Run `npm install` without --omit=dev.',
      'PRISMA_CLI_MISSING',
    );
  }
  const quiet = { PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
  let result = await run(prisma, root, quiet);
  let offline = false;
  if (
    result.code !== 0 &&
    ENGINE_DOWNLOAD_FAILED.test(result.output) &&
    !process.env.PRISMA_SCHEMA_ENGINE_BINARY
  ) {
    // `generate` never runs the schema engine; any existing file satisfies Prisma's presence check.
    offline = true;
    result = await run(prisma, root, { ...quiet, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath });
  }
  if (result.code !== 0) {
    throw new UserFacingError(
      `prisma generate failed (exit ${result.code}):\n${result.output.trim()}`,
      'PRISMA_GENERATE_FAILED',
    );
  }
  const done = result.output.split('\n').find((line) => line.includes('Generated Prisma Client'));
  log(
    `${(done ?? 'Generated Prisma Client').replace(/^\W+/, '').trim()}${offline ? ' (schema engine unavailable: skipped)' : ''}`,
  );
  return { offline };
}

/** Runs `prisma generate` and collects its combined output. */
function run(
  prisma: string,
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(prisma, ['generate'], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => resolve({ code: -1, output: `${output}\n${error.message}` }));
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), output }));
  });
}

async function main(): Promise<void> {
  try {
    await generatePrismaClient({ log: (line) => console.log(line) });
  } catch (error) {
    console.error(isUserFacingError(error) ? error.message : error);
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
