import { Prisma } from '../prisma/generated/client.ts';
import type { PrismaClient } from './db.ts';

export const DEMO_SOURCE_ID = 'demo';
/** The second demo source: the exchange-rates job (its own table, journal entries downstream). */
export const DEMO_FX_SOURCE_ID = 'demo-fx';
/** The demo-fx source's credentials reference; `npm start` gives it a local token when unset. */
export const DEMO_FX_SECRET_REF = 'DF_SECRET_DEMO_FX';
/**
 * The credentials reference of the demo partner's catalog API (`/catalog/:auth/…`); `npm start`
 * gives it a local token when unset.
 */
export const DEMO_CATALOG_SECRET_REF = 'DF_SECRET_DEMO_CATALOG';
/** The demo-fx schedule: every day at 02:30 UTC, for the previous day. */
export const DEMO_FX_SCHEDULE = { cron: '30 2 * * *', dateOffsetDays: -1 };

/** The demo source's schedule: every day at 02:00 UTC, for the previous day (issue #5). */
export const DEMO_SCHEDULE = { cron: '0 2 * * *', dateOffsetDays: -1 };

/**
 * Registers (or updates) the demo source pointing at the demo partner API; it submits each run's
 * summary to the partner's submissions API. Idempotent; a schedule or submit setting an operator
 * changed is kept.
 */
export async function ensureDemoSource(prisma: PrismaClient, partnerUrl: string): Promise<void> {
  const data = { name: 'Demo partner', baseUrl: partnerUrl, timezone: 'UTC', pageSize: 200, enabled: true };
  await prisma.source.upsert({
    where: { id: DEMO_SOURCE_ID },
    // The demo job ends with the non-idempotent downstream step (issue #6).
    create: { id: DEMO_SOURCE_ID, ...data, schedule: DEMO_SCHEDULE, submitSummary: true },
    update: { baseUrl: partnerUrl },
  });
  // Databases from before schedules existed get the demo schedule too (an operator's stays).
  await prisma.source.updateMany({
    where: { id: DEMO_SOURCE_ID, schedule: { equals: Prisma.DbNull } },
    data: { schedule: DEMO_SCHEDULE },
  });
}

/**
 * Registers (or points at the demo partner again) the `demo-fx` source of the exchange-rates job:
 * pages of 25 rates, a journal entry posted after each run. Idempotent; an operator's changes to
 * its schedule or settings are kept.
 */
export async function ensureDemoFxSource(prisma: PrismaClient, partnerUrl: string): Promise<void> {
  await prisma.source.upsert({
    where: { id: DEMO_FX_SOURCE_ID },
    create: {
      id: DEMO_FX_SOURCE_ID,
      name: 'Demo partner exchange rates',
      jobType: 'exchange-rates',
      baseUrl: partnerUrl,
      credentialsRef: DEMO_FX_SECRET_REF,
      timezone: 'UTC',
      pageSize: 25,
      schedule: DEMO_FX_SCHEDULE,
      submitSummary: true,
    },
    update: { baseUrl: partnerUrl },
  });
}
