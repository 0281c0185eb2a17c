// A worker that freezes during the non-idempotent call (R4, R9, R12a), three times at once: two real
// `durable-fetch worker` processes; the partner holds `POST /submissions` for 25 s before applying
// it, and applies requests late even when their client has left (late effects, as real partners
// do); the worker that sent the call is SIGSTOPped for 35 s, then SIGCONTinued. The other worker
// takes the activity's retry and must not conclude "not applied" before the call's settle window
// is over. Each time: exactly one live submission at the partner, and the ledger says what the
// partner holds.
//
// Be very careful: a frozen process still holds its open long polls, and the server hands them
// tasks it then waits on until they time out. Each worker runs one activity at a time, so the one
// busy in the call polls for no activity (the retry goes to the other), and the run's workflow
// tasks time out after 1 s, so one handed to the frozen worker is soon handed on.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { fetchStartOptions, prepareFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import type { fetchRecordsWorkflow } from '../workflows/fetch-records.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { spawnWorker, type Spawned, within } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const SOURCE = 'frozen-src';
const REPETITIONS = 3;
/** How long the partner takes to apply a submission; it declares a little more. */
const PROCESSING_MS = 25_000;
const FREEZE_MS = 35_000;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
const workers: Spawned[] = [];

before(async () => {
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => 60, lateEffectMs: 60_000 }),
    testClient(),
  ]);
});
after(async () => {
  for (const w of workers) {
    w.child.kill('SIGCONT');
    await w.stop('SIGKILL', 5_000);
  }
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

const prefixOf = (date: string) => `fetch-records:${SOURCE}:${date}:`;

/** Two workers of their own, one run, its holder frozen; returns what the partner then holds. */
async function repetition(n: number): Promise<string> {
  const date = `2026-08-0${n}`;
  const taskQueue = `test-frozen-${randomUUID()}`;
  const pair = [0, 1].map(() =>
    spawnWorker({
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      HTTP_CONNECT_TIMEOUT_MS: '1000',
      HTTP_RESPONSE_TIMEOUT_MS: '5000',
      DURABLE_FETCH_SWEEP_INTERVAL_MS: '2000',
      DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: '1',
      LOG_LEVEL: 'info',
    }),
  );
  workers.push(...pair);
  const outputs = () => pair.map((w) => w.output()).join('\n');
  await Promise.all(pair.map((w) => w.waitFor(/worker polling task queue/, 60_000)));
  partner.faults.add({
    route: 'submissions',
    action: 'submit',
    reference: `${prefixOf(date)}submit-summary:r1`,
    kind: 'delay',
    delayMs: PROCESSING_MS,
  });
  const prepared = await prepareFetch(
    { prisma: db.prisma, now: () => new Date('2026-11-29T12:00:00Z') },
    { sourceId: SOURCE, date, requestedBy: 'test' },
  );
  const handle = await client.workflow.start<typeof fetchRecordsWorkflow>('fetchRecordsWorkflow', {
    ...fetchStartOptions(prepared, taskQueue, 'FAIL'),
    workflowTaskTimeout: '1 second',
  });
  // Freeze whichever worker sent the call, the moment it says so.
  const sent = new RegExp(`"reference":"${prefixOf(date)}submit-summary:r1"[^\\n]*downstream call sent`);
  const holder = await within(
    Promise.any(pair.map((w) => w.waitFor(sent, 60_000).then(() => w))),
    60_000,
    outputs,
  );
  holder.child.kill('SIGSTOP');
  await sleep(FREEZE_MS);
  holder.child.kill('SIGCONT');

  const result = await within(handle.result(), 180_000, outputs);
  assert.equal(result.status, 'succeeded', `repetition ${n}`);
  // Strays, if any call took effect behind the ledger's back, are voided by the workers' sweep.
  await waitFor(
    async () =>
      (await db.prisma.downstreamAction.count({
        where: {
          run: { businessDate: new Date(`${date}T00:00:00Z`) },
          strayOf: { not: null },
          state: { notIn: ['compensated', 'not_applied', 'resolved'] },
        },
      })) === 0,
    'no stray left live',
    60_000,
  );

  const live = partner.submissions
    .list()
    .filter((s) => s.reference.startsWith(prefixOf(date)) && s.status !== 'voided');
  assert.equal(live.length, 1, `repetition ${n}: exactly one live submission`);
  const [kept] = live;
  const run = await db.prisma.fetchRun.findFirstOrThrow({
    where: { sourceId: SOURCE, businessDate: new Date(`${date}T00:00:00Z`) },
    include: { downstreamActions: true },
  });
  const own = run.downstreamActions.filter((a) => a.strayOf === null && a.state === 'confirmed');
  assert.deepEqual(
    own.map((a) => [a.partnerId, a.partnerState]),
    [[kept?.id, 'confirmed']],
    `repetition ${n}: the ledger names the one live submission`,
  );
  assert.equal(kept?.status, 'confirmed');
  const created = partner.ledger
    .entries({ action: 'submit' })
    .filter((e) => e.effect && e.reference?.startsWith(prefixOf(date))).length;
  return `repetition ${n}: ${created} submission(s) created, ${live.length} live`;
}

describe('a worker frozen during the downstream call', () => {
  it(
    `frozen while the partner holds its submission, ${REPETITIONS} times at once: exactly one live submission each time, as the ledger says`,
    { timeout: 600_000 },
    async (t) => {
      await createSource(db.prisma, SOURCE, partner.url, {
        submitSummary: true,
        submitMaxProcessingMs: PROCESSING_MS + 1_000,
      });
      const reports = await Promise.all(Array.from({ length: REPETITIONS }, (_, i) => repetition(i + 1)));
      for (const line of reports) t.diagnostic(line);
    },
  );
});
