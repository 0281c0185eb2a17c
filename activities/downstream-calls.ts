/**
 * How the ledger's activities call a partner's submissions API: as whom (the source's token,
 * resolved at call time), with heartbeats (a hanging call still sees a cancellation), the
 * activity's cancellation signal, and the call counted for the source's metrics.
 */
import { Context } from '@temporalio/activity';
import type { Source } from '../prisma/generated/client.ts';
import type { ActivityDeps } from './deps.ts';
import { errorFields } from './downstream-ledger.ts';
import { heartbeatEvery } from './heartbeat.ts';
import { observed } from './observe.ts';
import { bearerToken } from './sources.ts';
import type { SubmissionsTarget } from './submissions-client.ts';

export function createPartnerCalls(deps: ActivityDeps) {
  return {
    target(source: Source, signal: AbortSignal): SubmissionsTarget {
      const token = bearerToken(source, deps.secret);
      return {
        baseUrl: source.baseUrl,
        sourceId: source.id,
        signal,
        ...(token === undefined ? {} : { token }),
      };
    },

    /** Runs `call` with heartbeats and the activity's cancel signal, counting its outcome. */
    async withHeartbeats<T>(source: string, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
      const ctx = Context.current();
      const stop = heartbeatEvery(ctx);
      try {
        return await observed(deps, source, call(ctx.cancellationSignal));
      } finally {
        stop();
      }
    },

    /** Records the last failure on the row (best effort: the failure itself is what matters). */
    async noteError(actionId: string, err: unknown, what: string): Promise<void> {
      const { type, message } = errorFields(err, what);
      await deps.prisma.$executeRaw`
        UPDATE downstream_action SET last_error_type = ${type}, last_error = ${message}, updated_at = now()
         WHERE id = ${actionId}::uuid`.catch(() => 0);
    },
  };
}

export type PartnerCalls = ReturnType<typeof createPartnerCalls>;
