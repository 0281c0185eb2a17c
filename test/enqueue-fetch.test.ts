// Transactional workflow start (R5, R6) on real services: `enqueueFetch` writes a start command in
// the caller's Prisma transaction next to its business rows; an outbox publisher with the
// `temporal` sink relays it to the shared Temporal dev server. Rolled back, nothing starts;
// committed, exactly one workflow runs per business key however often the command is relayed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import {
  enqueueFetch,
  type EnqueuedFetch,
  getEnqueuedFetch,
  START_WORKFLOW_TOPIC,
  type StartCommand,
} from '../client/enqueue-fetch.ts';
import type { StartFetchRequest } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import { isUserFacingError } from '../runtime/errors.ts';
import type { Publisher } from '../worker/outbox/publisher.ts';
import { createStartWorkflowSink } from '../worker/outbox/start-workflow-sink.ts';
import type { fetchRunWorkflow } from '../workflows/fetch-records.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { testDeps } from './helpers/deps.ts';
import { testPublisher, waitFor } from './helpers/outbox.ts';
import { testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

// Source ids start with `enqueue-`: the Temporal namespace is shared with other test files.
const DATE = '2026-04-01'; // in the past of NOW: allowed by the default future-date policy
const NOW = () => new Date('2026-11-29T12:00:00Z');
const RECORDS = 40; // one stored page

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let publisher: Publisher;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => RECORDS });
  client = await testClient();
  worker = await testWorker(testDeps(db.prisma));
  // Driven pass by pass with runOnce(): no background loop.
  publisher = testPublisher(
    db.prisma,
    { temporal: createStartWorkflowSink(client) },
    { routes: [{ pattern: START_WORKFLOW_TOPIC, sink: 'temporal' }] },
  );
});

after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

const workflowIdOf = (sourceId: string, date = DATE) => `fetch/fetch-records/${sourceId}/${date}`;

/** The application's own write in the same transaction: registering the source to fetch. */
async function createSourceIn(tx: Prisma.TransactionClient, id: string, enabled = true): Promise<void> {
  await tx.source.create({
    data: { id, name: id, baseUrl: partner.url, timezone: 'UTC', pageSize: 100, enabled },
  });
}

function enqueue(tx: Prisma.TransactionClient, req: StartFetchRequest): Promise<EnqueuedFetch> {
  return enqueueFetch(tx, req, { taskQueue: worker.taskQueue, now: NOW });
}

async function commandRow(id: string) {
  return db.prisma.outboxEvent.findUniqueOrThrow({ where: { id } });
}

/** Executions of `workflowId` as Temporal's visibility lists them (it may lag behind a start). */
async function executions(workflowId: string): Promise<{ runId: string; status: string }[]> {
  const found: { runId: string; status: string }[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    found.push({ runId: info.runId, status: info.status.name });
  }
  return found;
}

/** Waits until visibility lists an execution of `workflowId` in `status`, then returns them all. */
async function executionsOnce(workflowId: string, status: string) {
  let listed: { runId: string; status: string }[] = [];
  await waitFor(
    async () => (listed = await executions(workflowId)).some((e) => e.status === status),
    `visibility to list ${workflowId} as ${status}`,
  );
  return listed;
}

async function assertNoWorkflow(workflowId: string): Promise<void> {
  await assert.rejects(client.workflow.getHandle(workflowId).describe(), WorkflowNotFoundError);
}

describe('enqueueFetch: transactional workflow start', () => {
  it('enqueue-fetch: a rolled-back transaction leaves no command, no business row and no workflow', async () => {
    const sourceId = 'enqueue-rollback';
    let enqueued: EnqueuedFetch | undefined;
    await assert.rejects(
      db.prisma.$transaction(async (tx) => {
        await createSourceIn(tx, sourceId);
        // Validated against the transaction's own view: the source exists only in there.
        enqueued = await enqueue(tx, { sourceId, date: DATE, requestedBy: 'test' });
        assert.equal(await tx.outboxEvent.count({ where: { id: enqueued.commandId } }), 1);
        throw new Error('rollback');
      }),
      /^Error: rollback$/,
    );
    const { commandId, workflowId } = enqueued ?? assert.fail('enqueueFetch did not return');
    assert.equal(workflowId, workflowIdOf(sourceId));

    assert.equal(await db.prisma.source.count({ where: { id: sourceId } }), 0);
    assert.equal(await db.prisma.outboxEvent.count({ where: { aggregateId: workflowId } }), 0);
    assert.equal(await getEnqueuedFetch(db.prisma, commandId), undefined);
    // A publisher pass finds nothing to relay, and Temporal never hears of the key.
    await publisher.runOnce();
    assert.equal(await db.prisma.outboxEvent.count({ where: { aggregateId: workflowId } }), 0);
    await assertNoWorkflow(workflowId);
    assert.equal(await db.prisma.fetchRun.count({ where: { sourceId } }), 0);
  });

  it('enqueue-fetch: a command written before the rename (type fetchRecordsWorkflow) starts its run as fetchRunWorkflow', async () => {
    const sourceId = 'enqueue-legacy';
    const workflowId = workflowIdOf(sourceId);
    const enqueued = await db.prisma.$transaction(async (tx) => {
      await createSourceIn(tx, sourceId);
      return enqueue(tx, { sourceId, date: DATE, requestedBy: 'test' });
    });
    // As an earlier enqueueFetch wrote it, still in the outbox at the deploy.
    await db.prisma.$executeRaw`
      UPDATE outbox_event SET payload = jsonb_set(payload, '{workflowType}', '"fetchRecordsWorkflow"')
       WHERE id = ${enqueued.commandId}::uuid`;
    assert.equal(await publisher.runOnce(), 1);
    assert.equal((await commandRow(enqueued.commandId)).status, 'published');
    const described = await client.workflow.getHandle(workflowId).describe();
    assert.equal(described.type, 'fetchRunWorkflow');
    await client.workflow.getHandle(workflowId).terminate('test: started is all it shows');
  });

  it('enqueue-fetch: a committed command is relayed to one workflow run, however often it is relayed', async () => {
    const sourceId = 'enqueue-commit';
    const workflowId = workflowIdOf(sourceId);
    const first = await db.prisma.$transaction(async (tx) => {
      await createSourceIn(tx, sourceId);
      return enqueue(tx, { sourceId, date: DATE, requestedBy: 'test' });
    });
    assert.deepEqual(first, { commandId: first.commandId, workflowId, businessDate: DATE });

    // Committed but not yet relayed: pending, and nothing started.
    const pending = await getEnqueuedFetch(db.prisma, first.commandId);
    assert.equal(pending?.status, 'pending');
    assert.equal(pending?.workflowId, workflowId);
    assert.equal(pending?.runId, undefined);
    assert.equal(pending?.lastError, undefined);
    const command = (await commandRow(first.commandId)).payload as unknown as StartCommand;
    assert.deepEqual(command, {
      workflowType: 'fetchRunWorkflow',
      jobType: 'fetch-records',
      workflowId,
      taskQueue: worker.taskQueue,
      sourceId,
      businessDate: DATE,
      input: {
        jobType: 'fetch-records',
        sourceId,
        businessDate: DATE,
        correlationId: command.input.correlationId,
        requestedBy: 'test',
      },
    });
    await assertNoWorkflow(workflowId);

    // Relay 1: the publisher starts the workflow and records its run id on the command.
    assert.equal(await publisher.runOnce(), 1);
    const relayed = await commandRow(first.commandId);
    assert.equal(relayed.status, 'published');
    const { runId } = relayed.result as { workflowId: string; runId: string };
    assert.match(runId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(relayed.result, { workflowId, runId });
    const published = await getEnqueuedFetch(db.prisma, first.commandId);
    assert.equal(published?.status, 'published');
    assert.equal(published?.workflowId, workflowId);
    assert.equal(published?.runId, runId);
    assert.equal(published?.lastError, undefined);
    const described = await client.workflow.getHandle(workflowId).describe();
    assert.equal(described.runId, runId);
    assert.equal(described.status.name, 'RUNNING'); // no worker polls its task queue yet
    assert.equal(described.taskQueue, worker.taskQueue);
    assert.equal(described.type, 'fetchRunWorkflow');

    // Relay 2: the same command once more (as after a publisher died before its mark).
    await db.prisma.$executeRaw`
      UPDATE outbox_event SET status = 'pending', published_at = NULL, result = NULL
       WHERE id = ${first.commandId}::uuid`;
    assert.equal(await publisher.runOnce(), 1);
    assert.deepEqual((await commandRow(first.commandId)).result, { workflowId, runId });

    // Relay 3: a second command for the same business key, from another transaction.
    const second = await db.prisma.$transaction((tx) =>
      enqueue(tx, { sourceId, date: DATE, requestedBy: 'test' }),
    );
    assert.notEqual(second.commandId, first.commandId);
    assert.equal(second.workflowId, workflowId);
    assert.equal(await publisher.runOnce(), 1);
    assert.deepEqual((await commandRow(second.commandId)).result, { workflowId, runId });
    assert.equal((await getEnqueuedFetch(db.prisma, second.commandId))?.runId, runId);

    // Still the one execution started by relay 1.
    assert.deepEqual(await executionsOnce(workflowId, 'RUNNING'), [{ runId, status: 'RUNNING' }]);

    // A worker on the command's task queue runs it to success: one FetchRun, of that run.
    const result = await worker.run(() =>
      client.workflow.getHandle<typeof fetchRunWorkflow>(workflowId, runId).result(),
    );
    assert.deepEqual(result, {
      status: 'succeeded',
      fetchRunId: result.fetchRunId,
      pages: 1,
      records: RECORDS,
    });
    const runs = await db.prisma.fetchRun.findMany({ where: { sourceId } });
    assert.equal(runs.length, 1);
    assert.equal(runs[0]?.id, result.fetchRunId);
    assert.equal(runs[0]?.status, 'succeeded');
    assert.equal(runs[0]?.workflowId, workflowId);
    assert.equal(runs[0]?.workflowRunId, runId);
    // The run is the first command's: its correlation id, not the second's.
    assert.equal(runs[0]?.correlationId, command.input.correlationId);
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), RECORDS);

    // Relay 4, after success: the succeeded key is not run again; the command records that run.
    const third = await db.prisma.$transaction((tx) =>
      enqueue(tx, { sourceId, date: DATE, requestedBy: 'test' }),
    );
    // (The pass also claims the run's own fetch.* events; this publisher has no route for them.)
    await publisher.runOnce();
    assert.equal((await commandRow(third.commandId)).status, 'published');
    assert.deepEqual((await commandRow(third.commandId)).result, { workflowId, runId, existing: true });
    assert.deepEqual(await executionsOnce(workflowId, 'COMPLETED'), [{ runId, status: 'COMPLETED' }]);
    assert.equal(await db.prisma.fetchRun.count({ where: { sourceId } }), 1);
  });

  it('enqueue-fetch: an invalid request throws UserFacingError inside the transaction and nothing is written', async () => {
    const cases: { name: string; req: StartFetchRequest; code: string; message: RegExp }[] = [
      {
        name: 'unknown source',
        req: { sourceId: 'enqueue-nosuch', date: DATE },
        code: 'UNKNOWN_SOURCE',
        message: /^unknown source 'enqueue-nosuch' \(known sources: /,
      },
      {
        name: 'date not on the calendar',
        req: { sourceId: 'enqueue-invalid', date: '2026-02-30' },
        code: 'INVALID_INPUT',
        message: /^invalid date '2026-02-30': expected YYYY-MM-DD$/,
      },
      {
        name: 'date not YYYY-MM-DD',
        req: { sourceId: 'enqueue-invalid', date: 'tomorrow' },
        code: 'INVALID_INPUT',
        message: /^invalid date 'tomorrow'/,
      },
      {
        name: 'date beyond the future-date policy',
        req: { sourceId: 'enqueue-invalid', date: '2026-12-05' },
        code: 'INVALID_INPUT',
        message: /2026-12-05 is in the future/,
      },
      {
        name: 'malformed source id',
        req: { sourceId: 'Enqueue Invalid', date: DATE },
        code: 'INVALID_INPUT',
        message: /^invalid source id 'Enqueue Invalid'/,
      },
    ];
    for (const { name, req, code, message } of cases) {
      await assert.rejects(
        db.prisma.$transaction(async (tx) => {
          // The business write goes first: it must roll back with the failed enqueue.
          await createSourceIn(tx, 'enqueue-invalid');
          await enqueue(tx, req);
        }),
        (err: unknown) => {
          assert.ok(isUserFacingError(err), `${name}: ${String(err)}`);
          assert.equal(err.code, code, name);
          assert.match(err.message, message, name);
          return true;
        },
      );
    }
    // A disabled source: the enqueue sees the transaction's own (disabled) row.
    await assert.rejects(
      db.prisma.$transaction(async (tx) => {
        await createSourceIn(tx, 'enqueue-disabled', false);
        await enqueue(tx, { sourceId: 'enqueue-disabled', date: DATE });
      }),
      (err: unknown) => isUserFacingError(err) && err.code === 'SOURCE_DISABLED',
    );

    const written = await db.prisma.outboxEvent.count({
      where: {
        aggregateId: {
          in: [
            workflowIdOf('enqueue-nosuch'),
            workflowIdOf('enqueue-invalid'),
            workflowIdOf('enqueue-invalid', '2026-12-05'),
            workflowIdOf('enqueue-disabled'),
          ],
        },
      },
    });
    assert.equal(written, 0);
    assert.equal(
      await db.prisma.source.count({ where: { id: { in: ['enqueue-invalid', 'enqueue-disabled'] } } }),
      0,
    );
  });

  it('enqueue-fetch: getEnqueuedFetch knows only start commands', async () => {
    assert.equal(await getEnqueuedFetch(db.prisma, '00000000-0000-4000-8000-000000000000'), undefined);
    const other = await db.prisma.outboxEvent.create({
      data: {
        id: '00000000-0000-4000-8000-000000000001',
        topic: 'fetch.run_completed',
        aggregateType: 'fetch_run',
        aggregateId: 'enqueue-other',
        payload: {},
        status: 'published',
      },
    });
    assert.equal(await getEnqueuedFetch(db.prisma, other.id), undefined);
  });
});
