/**
 * The baseline of the job-overhead bench: a bare Temporal workflow that runs `steps` regular
 * activities, one after the other, each a no-op — what a naive design of the same run spends on
 * round trips alone, with none of durable-fetch's guarantees.
 */
import { proxyActivities } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(step: number): Promise<number> }>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumAttempts: 20 },
});

export async function bareWorkflow(steps: number): Promise<number> {
  let done = 0;
  for (let step = 0; step < steps; step++) done += await noop(step);
  return done;
}
