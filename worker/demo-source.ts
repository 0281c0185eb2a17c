import { Prisma } from '../prisma/generated/client.ts';
import type { PrismaClient } from './db.ts';

export const DEMO_SOURCE_ID = 'demo';

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
