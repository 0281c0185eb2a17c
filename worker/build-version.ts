/**
 * Which build of durable-fetch a worker runs, as Temporal records it: every workflow task the
 * worker completes carries its deployment name and build id (the Web UI shows them on each
 * WorkflowTaskCompleted event, `temporal workflow describe` as the last build that ran the run).
 * So an operator can tell which code ran each step of a run across a deploy (docs/versioning.md).
 * The worker stamps its build without opting into Worker Deployment Versioning: runs move to the
 * new code on their next workflow task, kept safe by `patched()` and the replay gate.
 */
import { execFile } from 'node:child_process';
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

/** The Worker Deployment every durable-fetch worker belongs to (its name cannot contain '.'). */
export const DEPLOYMENT_NAME = 'durable-fetch';

export interface WorkerBuild {
  deploymentName: string;
  buildId: string;
  /** Where the build id came from, for the line the worker logs at start. */
  source: 'DURABLE_FETCH_BUILD_ID' | 'package version and git commit' | 'package version';
}

/**
 * `override` (DURABLE_FETCH_BUILD_ID) when set; else `<package version>+<short commit>` when the
 * project is a git checkout of its own (`.dirty` appended when tracked files differ from the
 * commit: that code is not the commit's), else the package version alone (an installed copy).
 */
export async function resolveWorkerBuild(projectRoot: string, override?: string): Promise<WorkerBuild> {
  if (override !== undefined) {
    return { deploymentName: DEPLOYMENT_NAME, buildId: override, source: 'DURABLE_FETCH_BUILD_ID' };
  }
  const version = await packageVersion(projectRoot);
  const commit = await gitCommit(projectRoot);
  return commit === undefined
    ? { deploymentName: DEPLOYMENT_NAME, buildId: version, source: 'package version' }
    : {
        deploymentName: DEPLOYMENT_NAME,
        buildId: `${version}+${commit}`,
        source: 'package version and git commit',
      };
}

/** How the worker names its build in its log and console lines. */
export function describeBuild(build: Pick<WorkerBuild, 'deploymentName' | 'buildId'>): string {
  return `${build.deploymentName} build ${build.buildId}`;
}

async function packageVersion(projectRoot: string): Promise<string> {
  const text = await readFile(path.join(projectRoot, 'package.json'), 'utf8');
  const { version } = JSON.parse(text) as { version?: unknown };
  return typeof version === 'string' && version !== '' ? version : '0.0.0';
}

const git = (projectRoot: string, args: string[]) =>
  promisify(execFile)('git', ['-C', projectRoot, ...args], { timeout: 5_000, encoding: 'utf8' });

/**
 * The checked-out commit (short), with `.dirty` when tracked files are changed; undefined when
 * git is missing or the project is not the top of its own checkout (e.g. vendored in another).
 */
async function gitCommit(projectRoot: string): Promise<string | undefined> {
  try {
    const { stdout } = await git(projectRoot, ['rev-parse', '--show-toplevel', '--short', 'HEAD']);
    const [top, commit] = stdout.trim().split('\n');
    if (!top || !commit || (await realpath(top)) !== (await realpath(projectRoot))) return undefined;
    const status = await git(projectRoot, ['status', '--porcelain', '--untracked-files=no']);
    return status.stdout.trim() === '' ? commit : `${commit}.dirty`;
  } catch {
    return undefined;
  }
}
