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

export function createStartWorkflowSink(temporal: Client): Sink {
  return {
    name: 'temporal',
    async publish(message: OutboxMessage) {
      const parsed = startCommandSchema.safeParse(message.payload);
      if (!parsed.success) {
        throw failure('InvalidInput', 'BAD_START_COMMAND', 'start command does not match its schema');
      }
      const command = parsed.data;
      const options = fetchStartOptions(command, command.taskQueue, 'USE_EXISTING');
      try {
        const handle = await temporal.workflow.start<typeof fetchRecordsWorkflow>(
          command.workflowType,
          options,
        );
        return { workflowId: command.workflowId, runId: handle.firstExecutionRunId };
      } catch (err) {
        // The server unreachable or overloaded: retry within the outbox's attempt budget.
        if (err instanceof ServiceError) {
          throw failure(
            'UpstreamUnavailable',
            'TEMPORAL_UNAVAILABLE',
            'start workflow: Temporal unavailable',
          );
        }
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        const described = await temporal.workflow.getHandle(command.workflowId).describe();
        return { workflowId: command.workflowId, runId: described.runId, existing: true };
      }
    },
    close: () => Promise.resolve(),
  };
}
