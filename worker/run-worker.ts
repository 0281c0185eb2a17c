/**
 * `durable-fetch worker`: the worker process (worker/worker-process.ts) on the process runtime of
 * worker/boot.ts, its pool sized for its slots, until SIGINT/SIGTERM.
 */
import type { Config } from '../runtime/config.ts';
import { describeBuild } from './build-version.ts';
import { bootProcess } from './boot.ts';
import { describeDownstreamQueues } from './downstream-pollers.ts';
import { downstreamSlotsAt, workerPool } from './pool-size.ts';
import { ensureSearchAttributes } from './search-attributes.ts';
import { startWorkerProcess } from './worker-process.ts';

/** Runs a worker until stopped; see `durable-fetch worker --help`. */
export async function runWorker(config: Config): Promise<never> {
  const say = (line: string) => console.error(line);
  const graceMs = config.worker.shutdownGraceMs;
  return bootProcess(
    {
      name: 'worker',
      config,
      temporalWorkers: true,
      say,
      stopping: (why, rt) => {
        if (!why.signal) return;
        rt.log.info({ signal: why.signal, graceMs }, 'worker stopping');
        say(
          `worker stopping (${why.signal}): no new tasks; running activities get ${graceMs} ms, then are ` +
            'cancelled (send it again to stop now)',
        );
      },
      // "Now": activities still running are retried elsewhere once their heartbeat times out.
      stoppingNow: (signal) =>
        say(`worker: second ${signal}, stopping now without waiting for running activities`),
      stopped: (_why, clean) => {
        if (clean) say('worker stopped');
      },
    },
    async (rt) => {
      const prisma = await rt.database(workerPool(config, await downstreamSlotsAt(config)));
      const temporal = await rt.temporal();
      const observability = await rt.serveMetrics(prisma);
      // A shared cluster may lack our search attributes: register them (no-op when present).
      await ensureSearchAttributes(temporal.connection, config.temporal.namespace);
      const running = await startWorkerProcess({
        config,
        prisma,
        temporal: rt.temporal,
        log: rt.log,
        metrics: rt.metrics,
        cleanup: true,
        say,
      });
      rt.watch('worker', running.run(), () => running.shutdown());
      // RUNNING from the moment `Worker.run` starts its pollers until its shutdown begins.
      rt.readyWhen(() => running.worker.getState() === 'RUNNING');
      if (observability.url) say(`metrics at ${observability.url}`);
      say(
        `worker polling task queue '${config.temporal.taskQueue}' with jobs ${running.jobs.types.join(', ')} ` +
          `as ${describeBuild(running.build)} (Ctrl-C to stop)`,
      );
      const downstreamLine = describeDownstreamQueues(running.downstreams.polling());
      if (downstreamLine) say(downstreamLine);
    },
  );
}
