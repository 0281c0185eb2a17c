/**
 * R8's shared breaker as the end-to-end tests see it: a poll of its row (what every worker reads)
 * that keeps each open period it saw, and the downstream rows tests set up.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type DownstreamSettingsInput,
  downstreamSettingsSchema,
  rowOf,
} from '../../db/ledger/downstreams.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';

/** Inserts a downstream row as a sources file would set it (the schema's defaults for the rest). */
export async function createDownstream(prisma: PrismaClient, input: DownstreamSettingsInput): Promise<void> {
  const settings = downstreamSettingsSchema.parse(input);
  await prisma.downstream.create({ data: { id: settings.id, ...rowOf(settings) } });
}

/** A breaker's history as polled: every open period, and the closings after them. */
export interface BreakerTimeline {
  /**
   * When each open period began, in order (the database's clock). An open row's `half_open_at`
   * is its opening plus the open time and stays on the row through half-open, and every opening
   * lasts the open time: a poll far more often than that misses none.
   */
  opened: Date[];
  /** When it closed after an opening, with the row's reason and actor. */
  closed: { at: Date; reason: string | null; changedBy: string | null }[];
}

export interface BreakerWatch {
  timeline: BreakerTimeline;
  /** Resolves once `check(timeline)` holds; rejects after `timeoutMs` with `what`. */
  until(check: (t: BreakerTimeline) => boolean, what: string, timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** Polls the breaker row of `downstream` (open time `openMs`) every `everyMs` until stopped. */
export function watchBreaker(
  prisma: PrismaClient,
  downstream: string,
  openMs: number,
  everyMs = 50,
): BreakerWatch {
  const timeline: BreakerTimeline = { opened: [], closed: [] };
  let running = true;
  let failure: Error | undefined;
  const poll = async () => {
    while (running) {
      const row = await prisma.breaker.findUnique({ where: { downstream } });
      if (row && row.state !== 'closed' && row.halfOpenAt) {
        const at = new Date(row.halfOpenAt.getTime() - openMs);
        const last = timeline.opened.at(-1);
        if (!last || last.getTime() !== at.getTime()) timeline.opened.push(at);
      }
      const lastOpen = timeline.opened.at(-1);
      const lastClose = timeline.closed.at(-1);
      if (row?.state === 'closed' && lastOpen && (!lastClose || lastClose.at < lastOpen)) {
        timeline.closed.push({ at: row.changedAt, reason: row.reason, changedBy: row.changedBy });
      }
      await sleep(everyMs);
    }
  };
  const polling = poll().catch((err: unknown) => {
    failure = err instanceof Error ? err : new Error(String(err));
  });
  return {
    timeline,
    async until(check, what, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!check(timeline)) {
        if (failure) throw failure;
        if (Date.now() > deadline) {
          throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${JSON.stringify(timeline)}`);
        }
        await sleep(everyMs);
      }
    },
    async stop() {
      running = false;
      await polling;
      if (failure) throw failure;
    },
  };
}
