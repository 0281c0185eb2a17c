// R8: a run behind an open circuit breaker waits instead of dead-lettering. A refused call is an
// attempt, so a breaker open for longer than a step's attempts (here `partnerHttpQuick`: 6
// attempts, its waits clamped to 10 s) ends the step with CircuitOpen; the workflow then runs the
// step again after the wait the refusal named, without calling the partner, until the breaker
// lets calls through — and the run completes with every record once, the partner's ledger showing
// no call while it was open. On real processes: a `durable-fetch worker`, the shared Temporal dev
// server, a cloned database and the demo partner. Source ids start with `bol-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { launchFetch, prepareFetch } from '../client/start-fetch.ts';
import { setBreaker } from '../db/retry/breaker.ts';
import { downstreamSettingsSchema, rowOf } from '../db/ledger/downstreams.ts';
import { createSource } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { fetchSteps } from './helpers/page-fetches.ts';
import { within } from './helpers/process.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

const DATE = '2026-09-09';
const RECORDS = 200;

const stack = useWorkerStack({ name: 'breaker-outlast', records: RECORDS });

describe('an open breaker outlasted (R8)', { timeout: 240_000 }, () => {
  it('a run whose step spent its attempts behind an open breaker waits, calls nothing, and completes once it closes', async () => {
    const { db, client, partner, taskQueue } = stack;
    // Settings cached by the worker for 5 s: written before the first call.
    const settings = downstreamSettingsSchema.parse({ id: 'bol-api', breaker: { openMs: 1_000 } });
    await db.prisma.downstream.create({ data: { id: settings.id, ...rowOf(settings) } });
    await createSource(db.prisma, 'bol-a', partner.url, {
      downstream: settings.id,
      retryPolicy: 'partnerHttpQuick',
    });
    await setBreaker(db.prisma, settings.id, 'open', { actor: 'test', reason: 'partner maintenance' });

    const ctx = { temporal: client, prisma: db.prisma, taskQueue };
    const prepared = await prepareFetch(ctx, { sourceId: 'bol-a', date: DATE, requestedBy: 'test' });
    const handle = await launchFetch(ctx, prepared);
    // The step's six attempts spent (each refused, a second or so apart) and the workflow waiting
    // to run it again: its history shows the failed page fetch (a local activity's marker, or an
    // activity task's failure) and a timer after it.
    await waitFor(
      async () => {
        const history = await client.workflow.getHandle(handle.workflowId).fetchHistory();
        const events = history.events ?? [];
        const failed = fetchSteps(events).find((step) => step.failureType === 'CircuitOpen')?.failedAt;
        return failed != null && events.slice(failed).some((e) => e.timerStartedEventAttributes);
      },
      'the step to end with CircuitOpen and the workflow to wait',
      90_000,
    );
    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'bol-a' } });
    assert.equal(run.status, 'retry_wait', 'the run shows it waits');
    assert.equal(run.errorClass, 'CircuitOpen');
    assert.equal(partner.ledger.count({ sourceId: 'bol-a' }), 0, 'no call while the breaker was open');
    assert.equal(await db.prisma.deadLetter.count(), 0);

    await setBreaker(db.prisma, settings.id, 'closed', { actor: 'test', reason: 'partner back' });
    const result = await within(handle.handle.result(), 120_000, () => stack.worker.output());
    assert.equal(result.status, 'succeeded');
    const rows = await db.prisma.fetchedRecord.count({ where: { sourceId: 'bol-a' } });
    assert.equal(rows, RECORDS, 'every record once');
    assert.equal(
      (await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'bol-a' } })).status,
      'succeeded',
    );
    assert.equal(await db.prisma.deadLetter.count(), 0, 'no dead letter');
  });
});
