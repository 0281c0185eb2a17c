/**
 * The `temporal` sink: relays transactional start commands (client/enqueue-fetch.ts) to Temporal.
 * The workflow id is the business key and the conflict policy USE_EXISTING, so a command relayed
 * twice — or a key already started by the CLI or a schedule — still gives one run. A key whose run
 * already succeeded is not run again (reuse policy ALLOW_DUPLICATE_FAILED_ONLY): the existing run
 * is recorded. The receipt `{ workflowId, runId }` lands on the command's outbox row.
 */
import { type Client, ServiceError, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { failure } from '../../activities/errors.ts';
import { startCommandSchema } from '../../client/enqueue-fetch.ts';
import { fetchStartOptions } from '../../client/start-fetch.ts';
import type { fetchRecordsWorkflow } from '../../workflows/fetch-records.ts';
import type { OutboxMessage, Sink } from './sinks.ts';

// gRPC status codes worth retrying: the server unreachable, slow, overloaded or racing itself.
// Anything else (unknown namespace or search attribute, permission denied, bad request) will not
// heal by waiting: the command goes dead at once, visible to operators.
const RETRYABLE_GRPC = new Map([
  [4, 'DEADLINE_EXCEEDED'],
  [8, 'RESOURCE_EXHAUSTED'],
  [10, 'ABORTED'],
  [14, 'UNAVAILABLE'],
]);

function serviceFailure(err: ServiceError): unknown {
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  const name = typeof code === 'number' ? RETRYABLE_GRPC.get(code) : undefined;
  if (name)
    return failure(
      'UpstreamUnavailable',
      `TEMPORAL_${name}`,
      `start workflow: Temporal unavailable (${name})`,
    );
  return failure(
    'InvalidInput',
    `TEMPORAL_GRPC_${typeof code === 'number' ? code : 'UNKNOWN'}`,
    'start workflow: refused by Temporal',
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
      const options = fetchStartOptions(command, command.taskQueue, 'USE_EXISTING');
      try {
        const handle = await temporal.withAbortSignal(signal, () =>
          temporal.workflow.start<typeof fetchRecordsWorkflow>(command.workflowType, options),
        );
        return { workflowId: command.workflowId, runId: handle.firstExecutionRunId };
      } catch (err) {
        if (err instanceof ServiceError) throw serviceFailure(err);
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        const described = await temporal.workflow.getHandle(command.workflowId).describe();
        return { workflowId: command.workflowId, runId: described.runId, existing: true };
      }
    },
    close: () => Promise.resolve(),
  };
}
