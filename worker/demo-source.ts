import type { PrismaClient } from './db.ts';

export const DEMO_SOURCE_ID = 'demo';

/**
 * Registers (or updates) the demo source pointing at the demo partner API. Idempotent.
 */
export async function ensureDemoSource(prisma: PrismaClient, partnerUrl: string): Promise<void> {
  const data = { name: 'Demo partner', baseUrl: partnerUrl, timezone: 'UTC', pageSize: 200, enabled: true };
  await prisma.source.upsert({
    where: { id: DEMO_SOURCE_ID },
    create: { id: DEMO_SOURCE_ID, ...data },
    update: { baseUrl: partnerUrl },
  });
}
