/**
 * The log context of an activity execution (R10): every line an activity logs — through
 * `deps.log` (pino) or the SDK's activity logger (`Context.log` and the SDK's own "Activity
 * started/completed/failed" lines) — carries the run's workflow id, run id, business key and
 * correlation id.
 *
 * The business key and correlation id come from the headers the workflow interceptor
 * (workflows/interceptors.ts) adds to every activity it schedules; the SDK logs "Activity started"
 * before any interceptor sees those headers, so the worker also remembers each run's context as
 * its workflow starts (the `logContext` sink) and from every activity's headers.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context } from '@temporalio/activity';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  ActivityOutboundCallsInterceptor,
  GetLogAttributesInput,
  Headers,
  InjectedSinks,
  Next,
} from '@temporalio/worker';
import type { Logger } from 'pino';
import {
  BUSINESS_KEY_HEADER,
  businessKeyOfWorkflowId,
  CORRELATION_ID_HEADER,
  type LogContextSinks,
  type RunLogContext,
} from '../contract/log-context.ts';

/** What every `deps.log` line of an activity execution carries. */
export interface ActivityLogFields extends RunLogContext {
  workflowId?: string;
  workflowRunId?: string;
  /** The activity type. */
  activity: string;
  /** Temporal's attempt of this activity (not a run's claim attempt, which claimRun logs). */
  activityAttempt: number;
}

const store = new AsyncLocalStorage<ActivityLogFields>();

/** The log fields of the activity execution in progress, if any. */
export function currentActivityLogFields(): ActivityLogFields | undefined {
  return store.getStore();
}

/** Runs known to this process, by Temporal run id; the oldest are forgotten first. */
const runs = new Map<string, RunLogContext>();
const MAX_RUNS = 10_000;

/** Remembers (or refreshes) the log context of run `runId`. */
export function rememberRun(runId: string, context: RunLogContext): void {
  const merged = { ...runs.get(runId), ...context };
  runs.delete(runId);
  runs.set(runId, merged);
  if (runs.size > MAX_RUNS) {
    const oldest = runs.keys().next();
    if (!oldest.done) runs.delete(oldest.value);
  }
}

/** The worker's side of the workflows' `logContext` sink (register as WorkerOptions.sinks). */
export const logContextSinks: InjectedSinks<LogContextSinks> = {
  logContext: {
    remember: {
      fn: (info, context) => rememberRun(info.runId, context),
      // A worker that replays a run (after a restart) learns its context again.
      callDuringReplay: true,
    },
  },
};

function headerText(headers: Headers, name: string): string | undefined {
  const payload: Payload | undefined = headers[name];
  if (!payload) return undefined;
  try {
    const value = defaultPayloadConverter.fromPayload<unknown>(payload);
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  } catch {
    return undefined;
  }
}

const defined = (context: RunLogContext): RunLogContext => ({
  ...(context.businessKey ? { businessKey: context.businessKey } : {}),
  ...(context.correlationId ? { correlationId: context.correlationId } : {}),
});

/** Inbound: runs the activity inside its log context. Outbound: adds it to the SDK's log lines. */
class ActivityLogContext implements ActivityInboundCallsInterceptor, ActivityOutboundCallsInterceptor {
  private fromHeaders: RunLogContext = {};

  constructor(private readonly ctx: Context) {}

  private context(): RunLogContext {
    const run = this.ctx.info.workflowExecution;
    const known = run ? runs.get(run.runId) : undefined;
    return defined({
      businessKey:
        this.fromHeaders.businessKey ??
        known?.businessKey ??
        (run ? businessKeyOfWorkflowId(run.workflowId) : undefined),
      correlationId: this.fromHeaders.correlationId ?? known?.correlationId,
    });
  }

  getLogAttributes(
    input: GetLogAttributesInput,
    next: Next<ActivityOutboundCallsInterceptor, 'getLogAttributes'>,
  ): Record<string, unknown> {
    return next({ ...input, ...this.context() });
  }

  execute(
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    const info = this.ctx.info;
    const run = info.workflowExecution;
    this.fromHeaders = defined({
      businessKey: headerText(input.headers, BUSINESS_KEY_HEADER),
      correlationId: headerText(input.headers, CORRELATION_ID_HEADER),
    });
    if (run && (this.fromHeaders.businessKey || this.fromHeaders.correlationId))
      rememberRun(run.runId, this.fromHeaders);
    const fields: ActivityLogFields = {
      ...(run ? { workflowId: run.workflowId, workflowRunId: run.runId } : {}),
      ...this.context(),
      activity: info.activityType,
      activityAttempt: info.attempt,
    };
    return store.run(fields, () => next(input));
  }
}

/** Register as `WorkerOptions.interceptors.activity`. */
export const activityLogContext: ActivityInterceptorsFactory = (ctx) => {
  const interceptor = new ActivityLogContext(ctx);
  return { inbound: interceptor, outbound: interceptor };
};

const LEVELS = new Set<string | symbol>(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);
type LogMethod = (...args: unknown[]) => unknown;

/** `fields` merged into a pino call's arguments (the call's own fields win). */
function withFields(fields: ActivityLogFields, args: unknown[]): unknown[] {
  const [first, ...rest] = args;
  if (first instanceof Error) {
    return [{ ...fields, err: first }, ...(rest.length > 0 ? rest : [first.message])];
  }
  if (typeof first === 'object' && first !== null) return [{ ...fields, ...first }, ...rest];
  return [fields, ...args];
}

/**
 * `base`, but inside an activity execution every line also carries that execution's
 * {@link ActivityLogFields}; outside one (a direct call in a test, the cleanup loop) it is `base`.
 */
export function contextualLogger(base: Logger): Logger {
  return new Proxy(base, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      const method = (value as LogMethod).bind(target);
      if (prop === 'child') return (...args: unknown[]) => contextualLogger(method(...args) as Logger);
      if (!LEVELS.has(prop)) return method;
      return (...args: unknown[]) => {
        const fields = store.getStore();
        return fields ? method(...withFields(fields, args)) : method(...args);
      };
    },
  });
}
