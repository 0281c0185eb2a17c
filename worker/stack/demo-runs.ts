/**
 * `npm start`'s demo runs: each started the way applications should start theirs — a start command
 * written in the same transaction as the app's own rows, relayed by the outbox publisher (R5) —
 * then followed to its end.
 */
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { enqueueFetch, getEnqueuedFetch, type EnqueuedFetchState } from '../../client/enqueue-fetch.ts';
import { duration, failureSummary, workflowUrl } from '../../client/format.ts';
import type { fetchRecordsWorkflow } from '../../workflows/fetch-records.ts';
import type { Config } from '../../runtime/config.ts';
import type { PrismaClient } from '../../db/client.ts';

/**
 * Enqueues today's run of `sourceId`, waits for the publisher to relay it and for it to end, and
 * says how it went; 'stuck' when its start command is dead or still pending (the stack stays up:
 * `outbox status` and `outbox dead list` show what holds it).
 */
export async function runDemo(
  ctx: { prisma: PrismaClient; client: Client; config: Config; say: (line: string) => void },
  sourceId: string,
  showUi: boolean,
): Promise<'ended' | 'stuck'> {
  const { prisma, client, config, say } = ctx;
  const since = () => duration(performance.now());
  const enqueued = await prisma.$transaction((tx) =>
    enqueueFetch(
      tx,
      { sourceId, requestedBy: 'npm-start' },
      {
        taskQueue: config.temporal.taskQueue,
        maxFutureDays: config.runs.maxFutureDays,
        maxInputBytes: config.runs.maxInputBytes,
      },
    ),
  );
  const relayed = await waitForRelay(prisma, enqueued.commandId, 60_000);
  if (!relayed || relayed.status === 'dead' || !relayed.runId) {
    say(
      relayed
        ? `the ${sourceId} run's start command is dead: ${relayed.lastError ?? 'see `durable-fetch outbox dead list`'}`
        : `the ${sourceId} run's start command is still pending after 60 s: see \`durable-fetch outbox status\``,
    );
    return 'stuck';
  }
  const joined = relayed.existing;
  const handle = client.workflow.getHandle<typeof fetchRecordsWorkflow>(enqueued.workflowId);
  // USE_EXISTING: an open run of the key (e.g. left by an earlier `npm start`) is joined, not doubled.
  say(
    joined
      ? `run ${enqueued.workflowId} had already succeeded`
      : `start of run ${enqueued.workflowId} relayed through the outbox`,
  );
  const ui = config.temporal.uiUrl;
  if (ui && showUi) say(`Temporal Web UI: ${ui}`);
  if (ui) say(`this run:        ${workflowUrl(ui, config.temporal.namespace, enqueued.workflowId)}`);
  const result = await handle.result().catch((err: unknown) => {
    // The stack stays up: the run's failure is there to inspect in the Web UI and with the CLI.
    say(`the ${sourceId} run failed: ${failureSummary(err)}`);
    return undefined;
  });
  if (result?.status === 'succeeded') {
    const what = joined ? `${sourceId} run had already succeeded` : `${sourceId} run succeeded`;
    say(`${what}: ${result.records} records in ${result.pages} pages — ${since()} after start`);
  } else if (result) {
    say(
      `${sourceId} run is a duplicate of ${result.ownerWorkflowId} (${result.existingStatus}) — ${since()} after start`,
    );
  }
  return 'ended';
}

/**
 * Waits until the publisher has relayed start command `commandId` or given up on it (dead);
 * undefined when it is still pending after `timeoutMs`.
 */
async function waitForRelay(
  prisma: Parameters<typeof getEnqueuedFetch>[0],
  commandId: string,
  timeoutMs: number,
): Promise<EnqueuedFetchState | undefined> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const state = await getEnqueuedFetch(prisma, commandId);
    if (!state) throw new Error(`start command ${commandId} disappeared`);
    if (state.status !== 'pending') return state;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}
