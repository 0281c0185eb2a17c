/**
 * Holding a run's `storePage` from outside, for tests and history scenarios that need a page to
 * be stored at a moment they choose: a lock on the demo job's business table (`fetched_record`),
 * which storePage writes and fetchPage never touches, so the run fetches its page and then waits
 * in storePage until the hold is released.
 */
import { waitFor } from './outbox.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';

export interface StoreHold {
  /** Resolves once a session (the held storePage) waits for the lock. */
  waiting(timeoutMs: number): Promise<void>;
  /** Ends the hold: the waiting storePage goes on. Resolves once the lock is gone. */
  release(): Promise<void>;
}

/** Takes the lock (in its own transaction of `prisma`) and returns the hold. */
export async function holdStorePage(prisma: PrismaClient): Promise<StoreHold> {
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked = () => {};
  const taken = new Promise<void>((resolve) => (locked = resolve));
  const holding = prisma.$transaction(
    async (tx) => {
      await tx.$executeRaw`LOCK TABLE fetched_record IN EXCLUSIVE MODE`;
      locked();
      await released;
    },
    { timeout: 600_000, maxWait: 10_000 },
  );
  await Promise.race([taken, holding]);
  return {
    async waiting(timeoutMs) {
      // From another session: a transaction sees one snapshot of pg_stat_activity.
      await waitFor(
        async () => {
          const [row] = await prisma.$queryRaw<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'`;
          return (row?.n ?? 0) > 0;
        },
        'storePage waiting for the business table',
        timeoutMs,
      );
    },
    async release() {
      release();
      await holding;
    },
  };
}
