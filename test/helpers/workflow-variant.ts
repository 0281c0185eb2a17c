/**
 * "Version B" of the workflow code, for tests of deploys while runs are open (docs/versioning.md):
 * a copy of workflows/ whose `fetchRecordsWorkflow` issues one more command (a 1 ms timer between
 * the page loop and the downstream step), behind `patched(VARIANT_PATCH)` or, to show what the
 * replay gate protects against, without it. Bundled the way the worker bundles (with the
 * workflow interceptor modules) into a file a spawned worker loads as
 * DURABLE_FETCH_WORKFLOW_BUNDLE. And what a test reads off the histories such runs leave: the
 * builds that ran them, whether they took the variant's path, whether a bundle replays them.
 */
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { replayWorkerOptions } from '../../worker/worker.ts';
import { PROJECT_ROOT } from '../../runtime/config.ts';

/** The variant's patch id: test-only, never used by workflows/. */
export const VARIANT_PATCH = 'test-only-deploy-variant-extra-timer';

/** Where the extra step goes in workflows/fetch-records.ts: after the page loop. */
const ANCHOR = '  if (state.submitSummary) {\n';

export interface WorkflowVariant {
  /** The bundle file (DURABLE_FETCH_WORKFLOW_BUNDLE). */
  bundlePath: string;
  code: string;
  remove(): Promise<void>;
}

function extraStep(guarded: boolean): string {
  const call = guarded ? `if (patched('${VARIANT_PATCH}')) await sleep(1);` : 'await sleep(1);';
  return [
    '// Test-only: the command version B adds (test/helpers/workflow-variant.ts).',
    "import { patched, sleep } from '@temporalio/workflow';",
    '',
    'export async function deployVariantStep(): Promise<void> {',
    `  ${call}`,
    '}',
    '',
  ].join('\n');
}

/**
 * Bundles the copy of workflows/ in `<dir>/workflows` (and contract/ beside it) the way the worker bundles (with its workflow
 * interceptor modules) into `<dir>/workflow-bundle.js`, for a worker's DURABLE_FETCH_WORKFLOW_BUNDLE.
 * Imports resolve as from the project: '@temporalio/workflow' from its node_modules.
 */
export async function bundleWorkflowCopy(dir: string): Promise<{ bundlePath: string; code: string }> {
  const workflows = path.join(dir, 'workflows');
  await symlink(path.join(PROJECT_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(workflows, 'index.ts'),
    workflowInterceptorModules: [path.join(workflows, 'interceptors.ts')],
    logger: quietLogger,
  });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  await writeFile(bundlePath, code);
  return { bundlePath, code };
}

/** Builds version B, guarded by `patched()` or not. */
export async function buildWorkflowVariant(options: { guarded: boolean }): Promise<WorkflowVariant> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'df-variant-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const workflows = path.join(dir, 'workflows');
    await cp(path.join(PROJECT_ROOT, 'workflows'), workflows, { recursive: true });
    // Workflow code imports the contract's values (business key, retry presets) too.
    await cp(path.join(PROJECT_ROOT, 'contract'), path.join(dir, 'contract'), { recursive: true });
    await writeFile(path.join(workflows, 'deploy-variant-step.ts'), extraStep(options.guarded));
    const file = path.join(workflows, 'fetch-records.ts');
    const source = await readFile(file, 'utf8');
    if (!source.includes(ANCHOR))
      throw new Error(`workflows/fetch-records.ts has no ${JSON.stringify(ANCHOR)}`);
    const changed =
      "import { deployVariantStep } from './deploy-variant-step.ts';\n" +
      source.replace(ANCHOR, `  await deployVariantStep();\n${ANCHOR}`);
    await writeFile(file, changed);
    return { ...(await bundleWorkflowCopy(dir)), remove };
  } catch (err) {
    await remove();
    throw err;
  }
}

/** The builds that completed the history's workflow tasks, in order, each once per stretch. */
export function buildsOf(history: History): string[] {
  const stamps = (history.events ?? []).flatMap((e) => {
    const done = e.workflowTaskCompletedEventAttributes;
    return done ? [`${done.workerDeploymentName ?? '?'}/${done.workerVersion?.buildId ?? '?'}`] : [];
  });
  return stamps.filter((s, i) => s !== stamps[i - 1]);
}

/** Whether the history took version B's patched path (its patch marker, then its timer). */
export function tookPatchedPath(history: History): boolean {
  const events = history.events ?? [];
  const marker = events.findIndex((e) => {
    const details = Object.values(e.markerRecordedEventAttributes?.details ?? {});
    const data = details.flatMap((d) => d.payloads ?? []).map((p) => Buffer.from(p.data ?? []).toString());
    return data.some((text) => text.includes(VARIANT_PATCH));
  });
  return marker >= 0 && events.slice(marker).some((e) => e.timerStartedEventAttributes);
}

/** Replays `history` with workflow bundle `code`: 'replayed', or the error's name and Core's line. */
export async function replayWith(code: string, workflowId: string, history: History) {
  const { sinks } = replayWorkerOptions();
  try {
    await Worker.runReplayHistory({ workflowBundle: { code }, sinks }, history, workflowId);
    return 'replayed';
  } catch (err) {
    if (!(err instanceof Error)) return String(err);
    return `${err.name}: ${/\[TMPRL\d+\][^"]*/.exec(err.message)?.[0] ?? err.message}`;
  }
}

const noop = () => {};
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };
