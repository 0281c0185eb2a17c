/**
 * The `temporal` sink: relays transactional start commands (client/enqueue-fetch.ts) to Temporal.
 * The workflow id is the business key and the conflict policy USE_EXISTING, so a command relayed
 * twice — or a key already started by the CLI or a schedule — still gives one run. A key whose run
 * already succeeded is not run again (reuse policy ALLOW_DUPLICATE_FAILED_ONLY): that run is
 * recorded with `existing: true`. The receipt `{ workflowId, runId }` lands on the command's row.
 */
import { type Client, ServiceError, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { failure } from '../../activities/errors.ts';
import { startCommandSchema } from '../../client/enqueue-fetch.ts';
import { fetchStartOptions } from '../../client/start-fetch.ts';
import { jobTypeOf } from '../../contract/business-key.ts';
import type { fetchRunWorkflow } from '../../workflows/fetch-records.ts';
import { RUN_WORKFLOW_TYPE } from '../../workflows/run-type.ts';
import type { OutboxMessage, Sink } from './sinks.ts';

// gRPC status codes that will not heal by waiting (unknown namespace or search attribute,
// permission denied, bad request…): the command goes dead at once, visible to operators. Every
// other code — unavailable, deadline, overloaded, aborted, internal, unknown — is retried within
// the outbox's attempt budget.
const PERMANENT_GRPC = new Map([
  [3, 'INVALID_ARGUMENT'],
  [5, 'NOT_FOUND'],
  [7, 'PERMISSION_DENIED'],
  [9, 'FAILED_PRECONDITION'],
  [11, 'OUT_OF_RANGE'],
  [12, 'UNIMPLEMENTED'],
  [16, 'UNAUTHENTICATED'],
]);

/** Types a failure of a call to Temporal: permanent by gRPC code, else transient. */
export function temporalFailure(err: unknown): unknown {
  if (err instanceof ApplicationFailure) return err;
  const code = err instanceof ServiceError ? (err.cause as { code?: unknown } | undefined)?.code : undefined;
  const permanent = typeof code === 'number' ? PERMANENT_GRPC.get(code) : undefined;
  if (permanent)
    return failure(
      'InvalidInput',
      `TEMPORAL_${permanent}`,
      `start workflow: refused by Temporal (${permanent})`,
    );
  const what = typeof code === 'number' ? `gRPC ${code}` : err instanceof Error ? err.name : 'error';
  return failure(
    'UpstreamUnavailable',
    'TEMPORAL_UNAVAILABLE',
    `start workflow: Temporal unavailable (${what})`,
  );
}

export function createStartWorkflowSink(temporal: Client): Sink {
  return {
    name: 'temporal',
    async publish(message: OutboxMessage, signal: AbortSignal) {
      const parsed = startCommandSchema.safeParse(message.payload);
      if (!parsed.success) {
        throw failure('InvalidInput', 'BAD_START_COMMAND', 'start command does not match its schema');
      }
      const command = parsed.data;
      const options = fetchStartOptions(
        { ...command, jobType: jobTypeOf(command) },
        command.taskQueue,
        'USE_EXISTING',
      );
      try {
        return await temporal.withAbortSignal(signal, async () => {
          try {
            // A command written before the rename names the legacy type: its run starts as
            // every new run does (the worker runs both types, one function).
            const handle = await temporal.workflow.start<typeof fetchRunWorkflow>(RUN_WORKFLOW_TYPE, options);
            return { workflowId: command.workflowId, runId: handle.firstExecutionRunId };
          } catch (err) {
            // Closed and succeeded: reuse policy refuses a new run; record the one that exists.
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
            const described = await temporal.workflow.getHandle(command.workflowId).describe();
            return { workflowId: command.workflowId, runId: described.runId, existing: true };
          }
        });
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw temporalFailure(err);
      }
    },
    close: () => Promise.resolve(),
  };
}
