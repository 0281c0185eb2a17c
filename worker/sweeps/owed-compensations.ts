/**
 * Compensations owed and not running (R4, R11): strays — effects at a partner that the ledger did
 * not expect, recorded by a superseded attempt, a lookup or `reconcile` — whatever their run's
 * outcome, and the actions of a failed or cancelled run whose compensation never started (its
 * workflow could not start it, or a sweeper died between settling the run and starting it; which
 * claims owe one: db/ledger/owed-compensations.ts). The workers' sweep starts the claim's
 * compensation workflow for each; a second start of an open one is refused by its workflow id, so
 * any number of sweepers may do this at once.
 */
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { readOwedClaims } from '../../db/ledger/owed-compensations.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { errorMessage } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { redactUrlsIn } from '../../runtime/redact.ts';
import type { CompensateRunInput } from '../../contract/types.ts';
import { compensationIdOf, startCompensationWorkflow } from '../../client/compensations/start.ts';

/** Claims handled per pass at most (the next pass goes on). */
const MAX_CLAIMS = 100;

export interface OwedCompensation {
  workflowId: string;
  fetchRunId: string;
  sourceId: string;
  businessDate: string;
  round: number;
  /** Strays among the actions owed. */
  strays: number;
  actions: number;
  started: 'started' | 'already_running' | 'failed';
  error?: string;
}

/**
 * Starts the compensation of every claim that owes one (see the module comment) on `taskQueue`.
 * Idempotent. @throws database errors of the query; a start that fails is reported, not thrown.
 */
export async function startOwedCompensations(ctx: {
  prisma: Pick<PrismaClient, '$queryRaw'>;
  temporal: Client;
  taskQueue: string;
  log: Logger;
}): Promise<OwedCompensation[]> {
  const claims = await readOwedClaims(ctx.prisma, MAX_CLAIMS);
  const owed: OwedCompensation[] = [];
  for (const c of claims) {
    const failed = c.status === 'dead_lettered' || c.status === 'cancelled';
    const input: CompensateRunInput = {
      fetchRunId: c.fetch_run_id,
      sourceId: c.source_id,
      businessDate: c.business_date,
      round: c.round,
      reason: !failed ? 'strays' : c.status === 'cancelled' ? 'cancelled' : 'failed',
    };
    const base = {
      ...input,
      workflowId: compensationIdOf(c.job_type, input),
      strays: c.strays,
      actions: c.actions,
    };
    try {
      await startCompensationWorkflow(ctx.temporal, c.job_type, input, ctx.taskQueue, 'sweep');
      ctx.log.warn(base, 'started a compensation that was owed');
      owed.push({ ...base, started: 'started' });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        owed.push({ ...base, started: 'already_running' });
        continue;
      }
      const error = redactUrlsIn(errorMessage(err));
      ctx.log.error({ ...base, error }, 'could not start an owed compensation');
      owed.push({ ...base, started: 'failed', error });
    }
  }
  return owed;
}
