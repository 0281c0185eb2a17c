/**
 * The breaker's admission of a partner call (db/retry/breaker.ts `admitCall`) as a piece of a
 * larger statement: the append of a page's previous response asks for the page's next call in
 * the same round trip (db/pages/staging.ts). Read its row back with `admissionOf`.
 */
import { Prisma } from '../../prisma/generated/client.ts';
import type { DownstreamSettings } from '../ledger/downstreams.ts';

/** `df_admit_call(…)` for `settings`, as a FROM item (the same call as `admitCall`'s). */
export function admitCallSql(settings: DownstreamSettings, retry: boolean): Prisma.Sql {
  const { id, breaker, retryBudget } = settings;
  return Prisma.sql`df_admit_call(${id}, ${retry}, ${breaker.trialCalls}::int,
      ${breaker.openMs}::int, ${retryBudget.ratio}::float8, ${retryBudget.minRetries}::int,
      ${retryBudget.windowMs}::int)`;
}
