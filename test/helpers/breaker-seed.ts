/**
 * The downstreams the breaker CLI tests look at (R8), each made the way workers make them: a
 * settings row, sources naming them, and traffic through the admissions every worker decides by
 * (db/retry/breaker.ts), so the windows and budgets shown are real ones.
 */
import assert from 'node:assert/strict';
import { admitCall, recordFailure } from '../../db/retry/breaker.ts';
import { defaultSettings, downstreamSettingsSchema, rowOf } from '../../db/ledger/downstreams.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { createSource } from './deps.ts';

/** Nothing listens there: no test of these fetches anything. */
const BASE = 'http://127.0.0.1:9/partner';

/** `breakers list --json` / `show --json` of one downstream, as the tests read it. */
export interface BreakerJson {
  downstream: string;
  state: string;
  forced: boolean;
  reason: string | null;
  changedBy: string | null;
  changedAt: string | null;
  configured: boolean;
  taskQueue: string;
  window: { calls: number; failures: number; retries: number };
  budget: { windowMs: number; calls: number; retries: number; allowed: number; exhausted: boolean };
  settings: { isolated: boolean; breaker: { minCalls: number }; retryBudget: { ratio: number } };
}

/** A downstream with settings of its own: isolated, and a budget of half the calls, at least one. */
export const CONFIGURED = downstreamSettingsSchema.parse({
  id: 'bk-configured',
  isolated: true,
  breaker: { minCalls: 4 },
  retryBudget: { ratio: 0.5, minRetries: 1 },
});

/**
 * Seeds `bk-configured` (a row; its budget spent), `bk-partner` (named by source `bk-s1`; 7 calls,
 * 2 retries, 3 failures: closed), `bk-orphan` (named by nothing but its breaker row, which one
 * failed call opened), `default` (source `bk-s2`), and `bk-removed` (only a removed source names it).
 */
export async function seedBreakers(prisma: PrismaClient): Promise<void> {
  await prisma.downstream.create({ data: { id: CONFIGURED.id, ...rowOf(CONFIGURED) } });
  await createSource(prisma, 'bk-s1', BASE, { downstream: 'bk-partner' });
  await createSource(prisma, 'bk-s2', BASE);
  await createSource(prisma, 'bk-gone', BASE, { downstream: 'bk-removed', removedAt: new Date() });
  // bk-partner has the defaults: opens at 50 % of 20 calls; retries ≤ max(10, 20 %).
  const partner = defaultSettings('bk-partner');
  for (let i = 0; i < 5; i++) assert.equal((await admitCall(prisma, partner, false)).admitted, true);
  for (let i = 0; i < 2; i++) assert.equal((await admitCall(prisma, partner, true)).admitted, true);
  for (let i = 0; i < 3; i++) await recordFailure(prisma, partner);
  // bk-configured: 2 calls and 2 retries spend a budget of half the calls (2 of the 5 the next
  // retry would make): the next retry is refused, as `exhausted` says.
  for (let i = 0; i < 2; i++) assert.equal((await admitCall(prisma, CONFIGURED, false)).admitted, true);
  for (let i = 0; i < 2; i++) assert.equal((await admitCall(prisma, CONFIGURED, true)).admitted, true);
  const refused = await admitCall(prisma, CONFIGURED, true);
  assert.ok(!refused.admitted && refused.refusal === 'retry_budget', JSON.stringify(refused));
  // bk-orphan's failures are judged by settings of one call (it has no row).
  const orphan = downstreamSettingsSchema.parse({ id: 'bk-orphan', breaker: { minCalls: 1 } });
  await admitCall(prisma, orphan, false);
  assert.ok(await recordFailure(prisma, orphan), 'bk-orphan opened');
}
