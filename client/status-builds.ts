/**
 * The worker builds polling each task queue, for `durable-fetch status` (docs/versioning.md
 * "Deploying a new version"): from Temporal's own poller list of the queue's workflow tasks, so
 * an operator sees which build takes the runs' next workflow tasks — during a deploy, the old and
 * the new one. Temporal keeps a poller listed for a few minutes after it stopped polling, so each
 * build carries how long ago it last polled.
 */
import type { Client } from '@temporalio/client';

export interface PollingBuild {
  taskQueue: string;
  /** The worker's Worker Deployment and build id; null for a worker that stamps none. */
  deploymentName: string | null;
  buildId: string | null;
  /** Worker processes (poller identities) of this build on the queue. */
  pollers: number;
  lastPollSecondsAgo: number;
}

/** temporal.api.enums.v1 values (the proto package is CommonJS-only). */
const WORKFLOW_TASK_QUEUE = 1;
const KIND_NORMAL = 1;

const secondsOf = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  t ? Number(t.seconds ?? 0) + (t.nanos ?? 0) / 1e9 : 0;

/** One row per build and task queue, the most recently polling first. Read-only. */
export async function readPollingBuilds(
  client: Client,
  namespace: string,
  taskQueues: readonly string[],
  now: Date,
): Promise<PollingBuild[]> {
  const rows: PollingBuild[] = [];
  for (const taskQueue of taskQueues) {
    const res = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: KIND_NORMAL },
      taskQueueType: WORKFLOW_TASK_QUEUE,
    });
    const builds = new Map<string, PollingBuild>();
    for (const poller of res.pollers ?? []) {
      const deploymentName = poller.deploymentOptions?.deploymentName || null;
      const buildId = poller.deploymentOptions?.buildId || poller.workerVersionCapabilities?.buildId || null;
      const ago = Math.max(0, now.getTime() / 1000 - secondsOf(poller.lastAccessTime));
      const key = `${deploymentName ?? ''}/${buildId ?? ''}`;
      const row = builds.get(key) ?? {
        taskQueue,
        deploymentName,
        buildId,
        pollers: 0,
        lastPollSecondsAgo: ago,
      };
      row.pollers++;
      row.lastPollSecondsAgo = Math.min(row.lastPollSecondsAgo, ago);
      builds.set(key, row);
    }
    rows.push(...[...builds.values()].sort((a, b) => a.lastPollSecondsAgo - b.lastPollSecondsAgo));
  }
  return rows;
}

/** How `status` names a build: `durable-fetch 0.1.0+10e8508`, or `(no build id)`. */
export function buildName(b: Pick<PollingBuild, 'deploymentName' | 'buildId'>): string {
  if (b.buildId === null) return '(no build id)';
  return b.deploymentName === null ? b.buildId : `${b.deploymentName} ${b.buildId}`;
}
