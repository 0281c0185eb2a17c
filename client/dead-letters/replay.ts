/**
 * Rate-limited replay of dead letters for operators (R8, R11): preview what a replay
 * would take, start the durable replay workflow, follow it, pause, resume or cancel it. Every act
 * is written to `audit_entry` (target type `replay`).
 */
import { randomUUID } from 'node:crypto';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { openDeadLetters, type ReplayFilter, type ReplayTarget } from '../../db/dead-letters/replay.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import {
  MAX_REPLAY_LETTERS,
  MAX_REPLAY_RATE,
  pauseReplaySignal,
  replayIdOf,
  type ReplayInput,
  type ReplayProgress,
  replayProgressQuery,
  type ReplayReport,
  replayWorkflowId,
  resumeReplaySignal,
} from '../../workflows/replay-api.ts';
import type { replayDeadLettersWorkflow } from '../../workflows/replay-dead-letters.ts';
import { recordAudit } from '../../db/audit.ts';
import { DEFAULT_REPLAY_MAX } from './replay-defaults.ts';

export type { ReplayFilter, ReplayProgress, ReplayReport, ReplayTarget };

export { DEFAULT_REPLAY_MAX };

export interface ReplayRequest {
  filter: ReplayFilter;
  ratePerSecond: number;
  max?: number;
  actor: string;
}

function checkRequest(req: ReplayRequest): number {
  if (!(
    Number.isFinite(req.ratePerSecond) &&
    req.ratePerSecond > 0 &&
    req.ratePerSecond <= MAX_REPLAY_RATE
  )) {
    throw new UserFacingError(
      `--rate must be a number in (0, ${MAX_REPLAY_RATE}] per second`,
      'INVALID_INPUT',
    );
  }
  const max = req.max ?? DEFAULT_REPLAY_MAX;
  if (!(Number.isInteger(max) && max >= 1 && max <= MAX_REPLAY_LETTERS)) {
    throw new UserFacingError(`--max must be an integer 1..${MAX_REPLAY_LETTERS}`, 'INVALID_INPUT');
  }
  return max;
}

/** What a replay with this request would take now (open letters not reserved by another replay). Read-only. */
export async function previewReplay(
  ctx: { prisma: Pick<PrismaClient, '$queryRaw'> },
  req: ReplayRequest,
): Promise<ReplayTarget[]> {
  return openDeadLetters(ctx.prisma, req.filter, checkRequest(req));
}

export interface StartedReplay {
  replayId: string;
  workflowId: string;
}

/**
 * Starts the durable replay workflow `replay/<replayId>` on `taskQueue`. It reserves and restarts
 * the letters itself, so the caller may exit at once. Audited as `replay.start`.
 * @throws UserFacingError INVALID_INPUT for a bad rate or max.
 */
export async function startReplay(
  ctx: { prisma: PrismaClient; temporal: Client; taskQueue: string },
  req: ReplayRequest,
): Promise<StartedReplay> {
  const max = checkRequest(req);
  const replayId = randomUUID();
  const workflowId = replayWorkflowId(replayId);
  const input: ReplayInput = {
    replayId,
    filter: req.filter,
    ratePerSecond: req.ratePerSecond,
    max,
    actor: req.actor,
  };
  await recordAudit(ctx.prisma, {
    actor: req.actor,
    action: 'replay.start',
    targetType: 'replay',
    targetId: replayId,
    details: { filter: { ...req.filter }, ratePerSecond: req.ratePerSecond, max },
  });
  await ctx.temporal.workflow.start<typeof replayDeadLettersWorkflow>('replayDeadLettersWorkflow', {
    workflowId,
    taskQueue: ctx.taskQueue,
    args: [input],
    staticSummary: `replay dead letters at ≤ ${req.ratePerSecond}/s`,
  });
  return { replayId, workflowId };
}

export type ReplayState =
  | { status: 'running'; progress: ReplayProgress }
  | { status: 'completed'; report: ReplayReport }
  | { status: string };

/**
 * Where a replay stands: its live progress while it runs, its report once it completed.
 * @throws UserFacingError NOT_FOUND.
 */
export async function replayState(ctx: { temporal: Client }, id: string): Promise<ReplayState> {
  const handle = ctx.temporal.workflow.getHandle<typeof replayDeadLettersWorkflow>(
    replayWorkflowId(replayIdOf(id)),
  );
  let status: string;
  try {
    status = (await handle.describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new UserFacingError(`no replay '${id}'`, 'NOT_FOUND');
    throw err;
  }
  if (status === 'RUNNING') return { status: 'running', progress: await handle.query(replayProgressQuery) };
  if (status === 'COMPLETED') return { status: 'completed', report: await handle.result() };
  return { status: status.toLowerCase() };
}

/** Waits for a replay's report, calling `onProgress` about every `everyMs` while it runs. */
export async function followReplay(
  ctx: { temporal: Client },
  id: string,
  onProgress: (p: ReplayProgress) => void,
  everyMs = 1000,
): Promise<ReplayReport> {
  const handle = ctx.temporal.workflow.getHandle<typeof replayDeadLettersWorkflow>(
    replayWorkflowId(replayIdOf(id)),
  );
  const result = handle.result();
  let done = false;
  void result.finally(() => {
    done = true;
  });
  while (!done) {
    const tick = new Promise((resolve) => setTimeout(resolve, everyMs));
    await Promise.race([result.catch(() => undefined), tick]);
    if (done) break;
    const progress = await handle.query(replayProgressQuery).catch(() => undefined);
    if (progress) onProgress(progress);
  }
  return result;
}

/**
 * Pauses (no new starts; runs already started go on), resumes or cancels (no new starts; the
 * letters not started are given back; the report still comes) a running replay. Audited.
 * @throws UserFacingError NOT_FOUND, NOT_RUNNING.
 */
export async function controlReplay(
  ctx: { prisma: PrismaClient; temporal: Client },
  id: string,
  action: 'pause' | 'resume' | 'cancel',
  actor: string,
): Promise<{ replayId: string }> {
  const replayId = replayIdOf(id);
  const state = await replayState(ctx, replayId);
  if (state.status !== 'running') {
    throw new UserFacingError(`replay ${replayId} is ${state.status}, not running`, 'NOT_RUNNING');
  }
  const handle = ctx.temporal.workflow.getHandle(replayWorkflowId(replayId));
  if (action === 'pause') await handle.signal(pauseReplaySignal);
  else if (action === 'resume') await handle.signal(resumeReplaySignal);
  else await handle.cancel();
  await recordAudit(ctx.prisma, {
    actor,
    action: `replay.${action}`,
    targetType: 'replay',
    targetId: replayId,
  });
  return { replayId };
}
