/**
 * npm's postinstall for this package (`tsx scripts/postinstall.ts`):
 *
 * 1. generates the Prisma Client (required: failing here fails `npm install`);
 * 2. compiles the `durable-fetch` CLI into .build/cli/ (best effort: it needs the client generated
 *    in step 1; without a build the command compiles itself on its first start, or runs through tsx);
 * 3. fetches the pinned Temporal CLI into .tools/ (best effort: a failure is a warning and exit 0,
 *    because `npm start` and `npm test` resolve the CLI again and then fail with the full how-to-fix
 *    message). Skipped with DURABLE_FETCH_SKIP_CLI_INSTALL=1; TEMPORAL_CLI_PATH is honoured.
 *
 * This entry point reads those two variables itself: it runs before the app's config module is usable.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorMessage, isUserFacingError } from '../runtime/errors.ts';
import { resolveTemporalCli } from '../worker/stack/temporal-cli.ts';
import { buildCli } from './build-cli.ts';
import { generatePrismaClient } from './generate.ts';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const say = (line: string) => console.log(`[durable-fetch] ${line}`);

async function installTemporalCli(): Promise<void> {
  if (process.env.DURABLE_FETCH_SKIP_CLI_INSTALL === '1') {
    say('Temporal CLI: skipped (DURABLE_FETCH_SKIP_CLI_INSTALL=1)');
    return;
  }
  try {
    const cli = await resolveTemporalCli({
      projectRoot: PROJECT_ROOT,
      cliPath: process.env.TEMPORAL_CLI_PATH,
      log: say,
    });
    say(`Temporal CLI: ${path.relative(PROJECT_ROOT, cli.path) || cli.path} (${cli.source})`);
  } catch (error) {
    const reason = isUserFacingError(error) ? error.message : errorMessage(error);
    say(`warning: could not get the Temporal CLI now; \`npm start\`/\`npm test\` will try again.\n${reason}`);
  }
}

async function main(): Promise<void> {
  try {
    await generatePrismaClient({ projectRoot: PROJECT_ROOT, log: say });
  } catch (error) {
    console.error(isUserFacingError(error) ? `[durable-fetch] ${error.message}` : error);
    process.exitCode = 1;
    return;
  }
  try {
    const entry = await buildCli({ projectRoot: PROJECT_ROOT });
    say(`CLI compiled: ${path.relative(PROJECT_ROOT, entry)}`);
  } catch (error) {
    say(
      `warning: could not compile the CLI now; it compiles itself on its first start.\n${errorMessage(error)}`,
    );
  }
  await installTemporalCli();
}

await main();
