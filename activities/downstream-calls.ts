/**
 * How the ledger's activities call a job's downstream action: the source's job and its hooks, as
 * whom (the source's token, resolved at call time), with heartbeats (a hanging call still sees a
 * cancellation), the activity's cancellation signal, and the call counted for the source's metrics.
 */
import { Context } from '@temporalio/activity';
import { recordLastError } from '../db/ledger.ts';
import type { Source } from '../prisma/generated/client.ts';
import type { ActivityDeps } from './deps.ts';
import { errorFields } from './downstream-ledger.ts';
import { heartbeatEvery } from './heartbeat.ts';
import { observed } from './observe.ts';
import { failure } from './errors.ts';
import type { DownstreamAction, DownstreamContext } from './job-api/define.ts';
import { inJob, jobOf, partnerAccess } from './job-runtime.ts';

export function createPartnerCalls(deps: ActivityDeps) {
  return {
    /**
     * Runs one hook of the source's downstream action with heartbeats and the activity's cancel
     * signal, counting its outcome; what the hook throws is classified.
     * @throws ApplicationFailure InvalidInput `NO_DOWNSTREAM_ACTION` when the source's job has none.
     */
    async call<T>(
      source: Source,
      hook: string,
      run: (action: DownstreamAction<unknown>, ctx: DownstreamContext<unknown>) => Promise<T>,
    ): Promise<T> {
      const { job, view } = jobOf(deps, source);
      const action = job.downstream;
      if (!action) {
        throw failure('InvalidInput', 'NO_DOWNSTREAM_ACTION', `job '${job.type}' has no downstream action`);
      }
      const ctx = Context.current();
      const access = { ...partnerAccess(deps, source, ctx.cancellationSignal), source: view };
      const stop = heartbeatEvery(ctx);
      try {
        return await observed(
          deps,
          source.id,
          inJob(job, `downstream ${hook}`, () => run(action, access)),
        );
      } finally {
        stop();
      }
    },

    /** Records the last failure on the row (best effort: the failure itself is what matters). */
    async noteError(actionId: string, err: unknown, what: string): Promise<void> {
      const { type, message } = errorFields(err, what);
      await recordLastError(deps.prisma, actionId, { type, message }).catch(() => 0);
    },
  };
}

export type PartnerCalls = ReturnType<typeof createPartnerCalls>;
