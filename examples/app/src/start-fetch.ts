/**
 * The application starting a run itself (e.g. when a user presses "sync now"): `startFetch` starts
 * the run of (source, day), or joins it when one exists already, and the run's handle tells when
 * it ends. Usage: `tsx src/start-fetch.ts <source> [YYYY-MM-DD]`.
 */
import { Client, Connection } from '@temporalio/client';
import { createPrisma, type DurableFetchContext, startFetch } from 'durable-fetch';

/** Starts (or joins) the run of `sourceId` on `date` and waits for its result. */
export async function syncNow(ctx: DurableFetchContext, sourceId: string, date?: string) {
  const started = await startFetch(ctx, { sourceId, ...(date ? { date } : {}), requestedBy: 'app-client' });
  return { workflowId: started.workflowId, joined: started.joined, result: await started.handle.result() };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [sourceId, date] = process.argv.slice(2);
  if (!sourceId) throw new Error('usage: tsx src/start-fetch.ts <source> [YYYY-MM-DD]');
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
  const prisma = createPrisma(process.env.DATABASE_URL ?? '');
  try {
    const ctx = {
      temporal: new Client({ connection }),
      prisma,
      taskQueue: process.env.DURABLE_FETCH_TASK_QUEUE ?? 'durable-fetch',
    };
    console.log(await syncNow(ctx, sourceId, date));
  } finally {
    await prisma.$disconnect();
    await connection.close();
  }
}
