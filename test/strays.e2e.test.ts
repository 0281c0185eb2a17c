// Strays (R4, R11): a live submission a partner holds under an action's reference that the ledger
// did not expect is never left alone — found by a lookup (beside the effect the lookup adopts) or
// by `reconcile`, it becomes a ledger row of its own, visible in `status` and the metrics, and the
// workers' sweep voids it through the compensation path, while the run's own submission stays.
// The partner's store is the judge.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { createHttpClient } from '../activities/http.ts';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { detail, runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { temporalAddress, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const DATE = '2026-09-09';
let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;

before(async () => {
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => 30 }),
    testClient(),
  ]);
  const http = createHttpClient({ connectTimeoutMs: 1_000, responseTimeoutMs: 1_000 });
  worker = await testWorker(testDeps(db.prisma, { http }));
});
after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

const referenceOf = (sourceId: string) => `fetch-records:${sourceId}:${DATE}:submit-summary:r1`;
const cli = (args: string[]) =>
  runCli(args, {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: worker.taskQueue,
  });

async function submittingSource(sourceId: string): Promise<void> {
  await createSource(db.prisma, sourceId, partner.url, { submitSummary: true, submitMaxProcessingMs: 1_000 });
}

async function run(sourceId: string) {
  const { handle } = await startFetch(
    { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue },
    { sourceId, date: DATE, requestedBy: 'test' },
  );
  return handle.result();
}

/** What the partner holds under the source's reference: id and status of each, oldest first. */
const heldFor = (sourceId: string) =>
  partner.submissions.byReference(referenceOf(sourceId)).map((s) => [s.id, s.status]);

/** Starts the compensations owed (as every worker's sweep does) and waits until no stray is live. */
async function sweepStrays(): Promise<void> {
  await worker.run(async () => {
    const swept = await cli(['reconcile', '--stuck']);
    assert.equal(swept.code, 0, detail(swept));
    assert.match(swept.stdout, /owed \(1 stray\); compensation \S+ started/);
    await waitFor(
      async () =>
        (await db.prisma.downstreamAction.count({
          where: { strayOf: { not: null }, state: { notIn: ['compensated', 'not_applied', 'resolved'] } },
        })) === 0,
      'every stray voided',
      60_000,
    );
  });
}

describe('strays', { concurrency: false }, () => {
  it('reconcile records a live submission the ledger does not know; status flags it; the sweep voids it and keeps the run’s own', async () => {
    const sourceId = 'stray-rec';
    await submittingSource(sourceId);
    assert.equal((await worker.run(() => run(sourceId))).status, 'succeeded');
    const [own] = partner.submissions.byReference(referenceOf(sourceId));
    assert.ok(own);
    // A late effect nothing in the run saw: a second submission under the same reference.
    const late = partner.submissions.create(referenceOf(sourceId), { pages: 1, records: 30 });

    const found = await cli(['reconcile', `${sourceId}/${DATE}`]);
    assert.equal(found.code, 1, detail(found));
    assert.match(found.stdout, new RegExp(`EXTRA_LIVE_SUBMISSION: .*${late.id}.*recorded as strays`));
    const [stray] = await db.prisma.downstreamAction.findMany({ where: { strayOf: { not: null } } });
    assert.deepEqual(
      [stray?.partnerId, stray?.state, stray?.reference],
      [late.id, 'confirmed', referenceOf(sourceId)],
    );
    const status = await cli(['status', '--check']);
    assert.equal(status.code, 1, detail(status));
    assert.match(status.stdout, /1 stray submissions at partners not yet voided/);
    const listed = await cli(['compensations', 'list', '--stray', '--json']);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { id: string }[]).map((r) => r.id),
      [stray?.id],
    );

    await sweepStrays();
    assert.deepEqual(heldFor(sourceId), [
      [own.id, 'confirmed'],
      [late.id, 'voided'],
    ]);
    const runRow = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
    assert.equal(runRow.status, 'succeeded', 'the run keeps its outcome');
    const clean = await cli(['reconcile', `${sourceId}/${DATE}`]);
    assert.equal(clean.code, 0, detail(clean));
  });

  it('a lookup that finds two live submissions adopts the oldest and records the other as a stray, which is voided', async () => {
    const sourceId = 'stray-lookup';
    await submittingSource(sourceId);
    // The submit takes effect, its answer is lost (500): the run looks the reference up 2 s later.
    partner.faults.add({
      route: 'submissions',
      action: 'submit',
      reference: referenceOf(sourceId),
      phase: 'after',
      kind: 'status',
      status: 500,
    });
    const result = await worker.run(async () => {
      const done = run(sourceId);
      // Before that lookup, a copy appears under the same reference (another attempt's late effect).
      await waitFor(
        () => partner.submissions.byReference(referenceOf(sourceId)).length === 1,
        'the submit’s effect',
      );
      partner.submissions.create(referenceOf(sourceId), { pages: 1, records: 30 });
      return done;
    });
    assert.equal(result.status, 'succeeded');
    const [first, second] = partner.submissions.byReference(referenceOf(sourceId));
    assert.ok(first && second);
    const rows = await db.prisma.downstreamAction.findMany({
      where: { run: { sourceId } },
      orderBy: { createdAt: 'asc' },
    });
    assert.deepEqual(
      rows.map((r) => [r.partnerId, r.strayOf === null ? 'own' : 'stray', r.state]),
      [
        [first.id, 'own', 'confirmed'],
        [second.id, 'stray', 'confirmed'],
      ],
    );
    await sweepStrays();
    assert.deepEqual(heldFor(sourceId), [
      [first.id, 'confirmed'],
      [second.id, 'voided'],
    ]);
  });
});
