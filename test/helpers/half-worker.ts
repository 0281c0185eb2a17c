/**
 * Test-only: one half of `durable-fetch worker` as its own process — `workflows` (the workflow
 * bundle, its interceptors and sinks, no activities) or `activities` (the project's activities
 * with their dependencies, no workflows) — on the task queue and services the environment names,
 * read by the worker's own config. Stopping the workflow half while the activity half completes an
 * activity puts that completion and whatever arrives meanwhile (a cancel) into one workflow task,
 * as a busy or restarting worker fleet can. Prints "half worker polling" once it polls; SIGTERM
 * stops it gracefully.
 *
 * Usage: node --import tsx test/helpers/half-worker.ts workflows|activities
 */
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.ts';
import { activityLogContext, logContextSinks } from '../../activities/log-context.ts';
import { createLogger } from '../../runtime/logger.ts';
import { createActivityDeps } from '../../worker/activity-deps.ts';
import { loadConfig } from '../../worker/config.ts';
import { createPrisma } from '../../worker/db.ts';
import { workerPool } from '../../worker/pool-size.ts';
import { connectNative } from '../../worker/temporal.ts';
import { WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from '../../worker/worker.ts';

async function main(role: string | undefined): Promise<void> {
  if (role !== 'workflows' && role !== 'activities')
    throw new Error('usage: half-worker.ts workflows|activities');
  const config = loadConfig();
  const log = createLogger(config.logLevel, { process: `half-worker-${role}` });
  const connection = await connectNative(config);
  const prisma =
    role === 'activities' ? createPrisma(config.database.url ?? '', workerPool(config, 0)) : undefined;
  const bundle = config.worker.workflowBundlePath;
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...(role === 'workflows'
      ? {
          ...(bundle
            ? { workflowBundle: { codePath: bundle } }
            : {
                workflowsPath: WORKFLOWS_PATH,
                interceptors: { workflowModules: WORKFLOW_INTERCEPTOR_MODULES },
              }),
          sinks: logContextSinks,
        }
      : {
          activities: createActivities(createActivityDeps(config, prisma!, log)),
          interceptors: { activity: [activityLogContext] },
          maxHeartbeatThrottleInterval: 2_000,
          defaultHeartbeatThrottleInterval: 2_000,
        }),
    shutdownGraceTime: 2_000,
  });
  const stop = () => worker.getState() === 'RUNNING' && worker.shutdown();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const running = worker.run();
  console.error(`half worker polling (${role})`);
  try {
    await running;
  } finally {
    await prisma?.$disconnect();
    await connection.close();
  }
  console.error(`half worker stopped (${role})`);
}

main(process.argv[2]).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
