/**
 * The Temporal workers of durable-fetch: the fetch-records workflow and its activities on one
 * task queue, and the activity-only workers of isolated downstreams' task queues.
 */
import { createRequire } from 'node:module';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import {
  type ActivityInterceptorsFactory,
  type InjectedSinks,
  type NativeConnection,
  type ReplayWorkerOptions,
  Worker,
  type WorkerOptions,
} from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities/index.ts';
import { activityLogContext, logContextSinks } from '../activities/log-context.ts';
import { activeTracing } from '../runtime/tracing-env.ts';
import type { RunSpanSinks } from '../contract/run-span.ts';

const require = createRequire(import.meta.url);
/** The extension of this build's modules: .ts in the sources, .js in the package's compiled dist/. */
const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** Path of the workflows entry the worker bundles. */
export const WORKFLOWS_PATH = require.resolve(`../workflows/index${EXT}`);

/**
 * Workflow interceptor modules (log context and header propagation). The worker bundles them with
 * {@link WORKFLOWS_PATH}; a pre-built `workflowBundle` must include them:
 * `bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES })`
 * — or {@link workflowInterceptorModules}`(true)`, for a worker that traces its workflows.
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [require.resolve(`../workflows/interceptors${EXT}`)];

/** The workflow side of tracing: a span for each run, its context handed to each step. */
const TRACE_INTERCEPTOR_MODULE = require.resolve(`../workflows/trace-interceptors${EXT}`);

/**
 * The interceptor modules of a worker's workflows: with the tracing one only where the process
 * traces. Temporal's OpenTelemetry workflow interceptors, bundled everywhere, cost an untraced
 * worker a third more CPU per run (spans built in the workflow and copied out through a sink, to
 * be dropped); ours is lighter, and still only for workers that trace. A run may still
 * move between a traced and an untraced worker: the interceptors add no command, and the replay
 * gate (test/workflow-replay.test.ts) replays every recorded history both ways.
 */
export function workflowInterceptorModules(traced = activeTracing() !== undefined): string[] {
  return traced ? [...WORKFLOW_INTERCEPTOR_MODULES, TRACE_INTERCEPTOR_MODULE] : WORKFLOW_INTERCEPTOR_MODULES;
}

/**
 * What a worker adds when the process traces (runtime/tracing-env.ts): a span per activity
 * attempt, the child of the run's span (Temporal's OpenTelemetry activity interceptor), and the
 * `runSpan` sink through which its workflows hand over their runs' spans
 * (workflows/trace-interceptors.ts). Without tracing, OpenTelemetry is not loaded, and the sink
 * drops what a pre-built bundle with that module sends it.
 */
async function tracingOptions() {
  const tracing = activeTracing();
  if (!tracing) {
    return { activity: [activityLogContext], sinks: { ...logContextSinks, ...DROP_RUN_SPANS } };
  }
  const otel = await import('@temporalio/interceptors-opentelemetry/lib/worker/index.js');
  const traced: ActivityInterceptorsFactory = (ctx) => ({
    inbound: new otel.OpenTelemetryActivityInboundInterceptor(ctx),
    outbound: new otel.OpenTelemetryActivityOutboundInterceptor(ctx),
  });
  const runSpans: InjectedSinks<RunSpanSinks> = {
    runSpan: { ended: { fn: (_info, span) => tracing.exportRunSpan(span) } },
  };
  return { activity: [activityLogContext, traced], sinks: { ...logContextSinks, ...runSpans } };
}

/** The workflows' `runSpan` sink where the process does not trace. */
const DROP_RUN_SPANS: InjectedSinks<RunSpanSinks> = { runSpan: { ended: { fn: () => undefined } } };

/**
 * What `Worker.runReplayHistories` needs to run workflow code as {@link buildWorker}'s worker does:
 * the same workflows, workflow interceptors (OpenTelemetry's too when `traced`) and sinks. The
 * replay gate (test/workflow-replay.test.ts, docs/versioning.md) uses it, so a change here reaches
 * both.
 */
export function replayWorkerOptions(traced = false): ReplayWorkerOptions {
  return {
    workflowsPath: WORKFLOWS_PATH,
    interceptors: { workflowModules: workflowInterceptorModules(traced) },
    sinks: { ...logContextSinks, ...DROP_RUN_SPANS },
  };
}

export interface BuildWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /**
   * A pre-built bundle (tests share one), built with {@link WORKFLOW_INTERCEPTOR_MODULES};
   * otherwise the workflows are bundled at start.
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  maxConcurrentActivityTaskExecutions?: number;
  /** Workflow executions kept in memory between their tasks; default the SDK's (sized from the heap). */
  maxCachedWorkflows?: number;
  /** How long running activities get to finish on shutdown before they are cancelled (R9). */
  shutdownGraceTimeMs?: number;
  /**
   * The build this worker runs (worker/build-version.ts), stamped on every workflow task it
   * completes; unset: the SDK's own default build id (its version and the bundle's checksum).
   */
  build?: WorkerDeploymentVersion;
}

/** Creates (does not run) the worker. Call `run()`; `shutdown()` stops it gracefully. */
export async function buildWorker(options: BuildWorkerOptions): Promise<Worker> {
  const workflows: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> = options.workflowBundle
    ? { workflowBundle: options.workflowBundle }
    : { workflowsPath: WORKFLOWS_PATH };
  const { activity, sinks } = await tracingOptions();
  return Worker.create({
    ...activityOptions(options),
    ...workflows,
    ...(options.maxCachedWorkflows === undefined ? {} : { maxCachedWorkflows: options.maxCachedWorkflows }),
    interceptors: {
      // Every activity's log lines carry its run's ids (activities/log-context.ts).
      activity,
      // With a pre-built bundle the SDK ignores (and warns about) workflow modules.
      ...(options.workflowBundle ? {} : { workflowModules: workflowInterceptorModules() }),
    },
    // Workflows tell the worker their run's log context as they start (workflows/interceptors.ts).
    sinks,
  });
}

export interface BuildActivityWorkerOptions extends Omit<BuildWorkerOptions, 'workflowBundle'> {
  /** The queue's dispatch limit set by this worker: where Temporal's task-queue config is refused. */
  maxTaskQueueActivitiesPerSecond?: number;
}

/**
 * Creates (does not run) a worker of activities only, on a queue no workflow task goes to: the
 * task queue of an isolated downstream's partner calls (R8, worker/downstream-pollers.ts). It runs
 * the same activities as {@link buildWorker}'s, with its own slots.
 */
export async function buildActivityWorker(options: BuildActivityWorkerOptions): Promise<Worker> {
  const { activity } = await tracingOptions();
  return Worker.create({
    ...activityOptions(options),
    interceptors: { activity },
    ...(options.maxTaskQueueActivitiesPerSecond === undefined
      ? {}
      : { maxTaskQueueActivitiesPerSecond: options.maxTaskQueueActivitiesPerSecond }),
  });
}

/** What every worker of the process shares: connection, activities, slots, shutdown, build stamp. */
function activityOptions(options: BuildWorkerOptions) {
  const activities: WorkerOptions['activities'] = createActivities(options.deps);
  return {
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities,
    maxConcurrentActivityTaskExecutions: options.maxConcurrentActivityTaskExecutions ?? 20,
    // The database steps run as local activities (workflows/db-steps.ts): as many at once as the
    // regular ones, so that the pool sized for the slots serves both.
    maxConcurrentLocalActivityExecutions: options.maxConcurrentActivityTaskExecutions ?? 20,
    shutdownGraceTime: options.shutdownGraceTimeMs ?? 20_000,
    // Stamped, not versioned: workflow tasks go to any worker of the task queue, so an open run
    // moves to the new code on its next task (kept replay-safe by patched(); docs/versioning.md).
    // Pinned versioning would leave a paused run waiting for days on its old build's workers.
    ...(options.build
      ? { workerDeploymentOptions: { version: options.build, useWorkerVersioning: false } }
      : {}),
    // Heartbeats carry cancellations back to activities: send them at least every 2 s (instead of
    // 80 % of the heartbeat timeout), so a cancelled run stops its partner call promptly (R9).
    ...workerTuning(),
  } satisfies Partial<WorkerOptions>;
}

/**
 * The settings of every worker of the process that are not its queue or activities (the bench's
 * bare-workflow worker uses them too, so that its baseline runs on the same settings).
 */
export function workerTuning() {
  return {
    maxHeartbeatThrottleInterval: 2_000,
    defaultHeartbeatThrottleInterval: 2_000,
  } satisfies Partial<WorkerOptions>;
}
