/**
 * `durable-fetch publisher`: the outbox publisher (worker/outbox/create-publisher.ts) on the
 * process runtime of worker/boot.ts, its pool sized for its loops, until SIGINT/SIGTERM.
 */
import type { Config } from '../../runtime/config.ts';
import { bootProcess } from '../boot.ts';
import { publisherPool } from '../pool-size.ts';
import { type RunningPublisher, startPublisher } from './create-publisher.ts';

/** Runs a publisher until stopped; see `durable-fetch publisher --help`. */
export async function runPublisher(config: Config): Promise<never> {
  const say = (line: string) => console.error(line);
  let running: RunningPublisher | undefined;
  return bootProcess(
    {
      name: 'publisher',
      config,
      say,
      stopping: (why) => {
        if (why.signal) say('publisher stopping: finishing deliveries in flight');
      },
      stopped: (_why, clean) => {
        if (!clean || !running) return;
        const { published } = running.publisher.stats;
        say(`publisher stopped (${published} event${published === 1 ? '' : 's'} published)`);
      },
    },
    async (rt) => {
      const prisma = await rt.database(publisherPool());
      const observability = await rt.serveMetrics(prisma);
      const publisher = await startPublisher(config, prisma, rt.temporal, rt.log, rt.metrics);
      running = publisher;
      rt.onStop('publisher', () => publisher.stop());
      rt.readyWhen(() => publisher.publisher.claiming);
      if (observability.url) say(`metrics at ${observability.url}`);
      const routes = config.outbox.routes.map((r) => `${r.pattern}→${r.sink}`).join(', ');
      rt.log.info({ routes }, 'publisher running');
      say(`publisher running (routes: ${routes}; Ctrl-C to stop)`);
    },
  );
}
