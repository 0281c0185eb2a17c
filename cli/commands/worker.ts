import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

const WORKER_HELP = `
Runs the fetch workflows and their activities on DURABLE_FETCH_TASK_QUEUE (run as many as you like),
for every built-in job (jobs/index.ts) and every job of the modules DURABLE_FETCH_JOBS names
(docs/jobs.md); it names any enabled source whose job it does not run.
SIGINT/SIGTERM stops it gracefully (R9): it polls no new tasks, lets running activities finish for
DURABLE_FETCH_SHUTDOWN_GRACE_MS (default 20000), then cancels the rest (a partner call in flight is
aborted) so that Temporal retries them on another worker; it prints "worker stopped" and exits 0.
A second SIGINT/SIGTERM during the grace time stops at once (exit 130/143): activities still
running are retried elsewhere once their heartbeat times out.
It serves /metrics (its own and the Temporal SDK's) on DURABLE_FETCH_METRICS_HOST:DURABLE_FETCH_METRICS_PORT
(default 0.0.0.0:9464; 0 = any free port), with /livez (200 while it answers) and /readyz (200 only
while it polls the task queue: 503 while starting and from SIGTERM on), and samples backlog and health every
DURABLE_FETCH_METRICS_SAMPLE_MS; see docs/operations.md.
It runs DURABLE_FETCH_WORKER_ACTIVITY_SLOTS activities at once (default 20), and as many local
activities (the database steps of its workflow tasks), and opens twice that many database
connections plus its downstream pollers' slots (read at start) plus 4 (health sampler,
cleanup, stuck-run sweep, downstream refresh); each session waits at most
5 s for a lock, is ended by PostgreSQL after 10 s idle inside a transaction, and a connection
attempt gives up after 5 s. Every DURABLE_FETCH_SWEEP_INTERVAL_MS (default 60000; 0 = off) it
settles stuck runs: rows still 'running' or 'retry_wait' whose lease ran out
(DURABLE_FETCH_LEASE_TTL_MS) while their workflow is closed or gone (e.g. terminated in the Web UI); see durable-fetch reconcile --stuck.
It stamps its build on every workflow task it completes (deployment 'durable-fetch', build id
DURABLE_FETCH_BUILD_ID, else <package version>+<git commit> in a git checkout, '.dirty' with changed
tracked files, else the package version): the Web UI shows it on each WorkflowTaskCompleted event.
It does not opt into pinned Worker Deployment Versioning: an open run moves to a new build on its
next workflow task, so workflow changes go behind patched() (docs/versioning.md).
It also polls the task queue of every downstream row (the sources file's downstreams,
<task queue>-ds-<downstream>)
with that downstream's maxConcurrentCalls slots, on top of its own: an isolated downstream's page
fetches run there (R8), and it puts an isolated downstream's callsPerSecond, sourceCallsPerSecond
and sourceWeights on that queue as Temporal's task-queue config (server-side, across workers). It reads the downstreams again every
DURABLE_FETCH_DOWNSTREAM_REFRESH_MS (default 10000; 0 = at start only); see docs/downstreams.md.`;

/** `durable-fetch worker`: a Temporal worker against the configured Temporal and PostgreSQL. */
export function registerWorker(program: Command, ctx: () => CliContext): void {
  program
    .command('worker')
    .description('run a worker (workflows + activities) on the task queue until SIGINT/SIGTERM')
    .addHelpText('after', WORKER_HELP)
    .action(async () => {
      // Imported only when it runs: help loads none of the worker.
      const { runWorker } = await import('../../worker/run-worker.ts');
      await runWorker(ctx().config);
    });
}
