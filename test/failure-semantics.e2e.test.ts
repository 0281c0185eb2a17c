// Failure semantics end to end (R7, R9) on the shared Temporal server, a cloned database
// and the demo partner over real sockets: non-retryable errors, Retry-After, cancellation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { createHttpClient } from '../activities/http.ts';
import { startFetch, type DurableFetchContext } from '../client/start-fetch.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const DATE = '2026-04-01';
let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let ctx: DurableFetchContext;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => 60 });
  client = await testClient();
  // A response timeout far beyond the test: only the cancellation can abort the hanging request.
  const http = createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 120_000 });
  worker = await testWorker(testDeps(db.prisma, { http }));
  ctx = {
    temporal: client,
    prisma: db.prisma,
    taskQueue: worker.taskQueue,
    now: () => new Date('2026-11-29T12:00:00Z'),
  };
});
after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

async function run(sourceId: string): Promise<unknown> {
  const started = await startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
  return started.handle.result().catch((err: unknown) => err);
}

function innermost(err: unknown): unknown {
  let e = err;
  while (e instanceof Error && e.cause) e = e.cause;
  return e;
}

const at = (iso: string) => new Date(iso).getTime();

describe('failure semantics', () => {
  it('a non-retryable partner answer (401) fails on the first attempt and the run records PermissionDenied', async () => {
    await createSource(db.prisma, 'fs-denied', partner.url);
    partner.faults.add({ sourceId: 'fs-denied', kind: 'status', status: 401, times: 5 });
    const err = await worker.run(() => run('fs-denied'));
    assert.ok(err instanceof WorkflowFailedError, String(err));
    // The failure itself, as a local page fetch (the default) reports it, or inside the
    // ActivityFailure of an activity task.
    assert.ok(
      err.cause instanceof ApplicationFailure || err.cause instanceof ActivityFailure,
      String(err.cause),
    );
    const cause = innermost(err);
    assert.ok(cause instanceof ApplicationFailure);
    assert.equal(cause.type, 'PermissionDenied');
    assert.equal(partner.ledger.count({ sourceId: 'fs-denied' }), 1, 'no retry of a permanent error');
    const row = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'fs-denied' } });
    assert.equal(row.status, 'dead_lettered');
    assert.equal(row.errorClass, 'PermissionDenied');
    assert.match(row.errorMessage ?? '', /permission denied \(401\)/);
    assert.equal(row.leaseUntil, null);
  });

  it('a malformed or wrongly shaped partner page is InvalidResponse: not retried, recorded on the run', async () => {
    for (const kind of ['malformed', 'schema'] as const) {
      const sourceId = `fs-${kind}`;
      await createSource(db.prisma, sourceId, partner.url);
      partner.faults.add({ sourceId, kind, times: 5 });
      const err = await worker.run(() => run(sourceId));
      const cause = innermost(err);
      assert.ok(cause instanceof ApplicationFailure, String(err));
      assert.equal(cause.type, 'InvalidResponse');
      assert.equal(partner.ledger.count({ sourceId }), 1, `${kind}: no retry`);
      const row = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      assert.deepEqual([row.status, row.errorClass], ['dead_lettered', 'InvalidResponse']);
    }
  });

  it('a 50 MB partner page dead-letters the run as InvalidResponse RESPONSE_TOO_LARGE without being read whole; nothing of it is staged or stored', async () => {
    const sourceId = 'fs-oversize';
    const bodyBytes = 50_000_000;
    await createSource(db.prisma, sourceId, partner.url);
    // The worker's client keeps the default cap (16 MiB); every attempt would get the same page.
    partner.faults.add({ sourceId, cursor: null, kind: 'oversize', bytes: bodyBytes, times: 5 });
    const err = await worker.run(() => run(sourceId));
    const cause = innermost(err);
    assert.ok(cause instanceof ApplicationFailure, String(err));
    assert.equal(cause.type, 'InvalidResponse');

    const letter = await db.prisma.deadLetter.findFirstOrThrow({ where: { sourceId } });
    assert.deepEqual([letter.errorType, letter.errorCode], ['InvalidResponse', 'RESPONSE_TOO_LARGE']);
    assert.match(letter.errorMessage, /response body larger than 16777216 bytes/);
    const row = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
    assert.deepEqual([row.status, row.errorClass], ['dead_lettered', 'InvalidResponse']);
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), 0);
    assert.equal(
      await db.prisma.fetchedPage.count({
        where: { key: pageKeyFor({ jobType: 'fetch-records', sourceId: sourceId, businessDate: DATE }, 0) },
      }),
      0,
    );

    // Asked once (not retried), and the client went away long before the body's end.
    const entries = () => partner.ledger.entries({ sourceId });
    for (let i = 0; i < 100 && entries().length === 0; i++) await sleep(50);
    assert.deepEqual(
      entries().map((e) => [e.status, e.fault, e.bodyBytes]),
      [[200, 'oversize', bodyBytes]],
    );
    const sent = entries()[0]?.bytesSent ?? bodyBytes;
    assert.ok(sent < bodyBytes, `the partner sent ${sent} of ${bodyBytes} bytes`);
  });

  it('the client rejects an oversize workflow input or a malformed correlation id before starting anything', async () => {
    await createSource(db.prisma, 'fs-input', partner.url);
    const refused = async (c: DurableFetchContext, correlationId?: string) => {
      const err = await startFetch(c, { sourceId: 'fs-input', date: DATE, correlationId }).catch(
        (e: unknown) => e,
      );
      assert.ok(err instanceof UserFacingError, String(err));
      assert.equal(err.code, 'INVALID_INPUT');
      return err.message;
    };
    assert.match(await refused({ ...ctx, maxInputBytes: 64 }), /exceeds the maximum of 64/);
    assert.match(await refused(ctx, 'Bearer abc/def'), /invalid correlation id/);
    assert.match(await refused(ctx, 'x'.repeat(129)), /invalid correlation id/);
    assert.equal(await db.prisma.fetchRun.count({ where: { sourceId: 'fs-input' } }), 0);
    const missing = await client.workflow
      .getHandle(`fetch/fetch-records/fs-input/${DATE}`)
      .describe()
      .catch((e: unknown) => e);
    assert.ok(missing instanceof WorkflowNotFoundError, String(missing));
  });

  it('transient failures (500, 502, a reset, a response slower than the timeout) are retried until the run succeeds', async () => {
    // A worker whose partner calls time out after 1 s, so a 3 s hang is a Timeout.
    const quick = await testWorker(
      testDeps(db.prisma, { http: createHttpClient({ connectTimeoutMs: 1_000, responseTimeoutMs: 1_000 }) }),
    );
    await createSource(db.prisma, 'fs-transient', partner.url);
    partner.faults.add({ sourceId: 'fs-transient', cursor: null, kind: 'status', status: 500 });
    partner.faults.add({
      sourceId: 'fs-transient',
      cursor: null,
      kind: 'status',
      status: 502,
      afterRequests: 1,
    });
    partner.faults.add({ sourceId: 'fs-transient', cursor: null, kind: 'reset', afterRequests: 2 });
    partner.faults.add({
      sourceId: 'fs-transient',
      cursor: null,
      kind: 'delay',
      delayMs: 3_000,
      afterRequests: 3,
    });
    const c = { ...ctx, taskQueue: quick.taskQueue };
    const result = await quick.run(async () => {
      const started = await startFetch(c, { sourceId: 'fs-transient', date: DATE, requestedBy: 'test' });
      return started.handle.result();
    });
    assert.deepEqual(result, { status: 'succeeded', fetchRunId: result.fetchRunId, pages: 1, records: 60 });
    // The hung request still completes at the partner 3 s after it began, perhaps after the run.
    const ledgerFirstPage = () => partner.ledger.entries({ sourceId: 'fs-transient', cursor: null });
    for (let i = 0; i < 50 && !ledgerFirstPage().some((e) => e.fault === 'delay'); i++) await sleep(100);
    const firstPage = ledgerFirstPage();
    const outcomes = firstPage.map((e) => e.fault ?? e.status);
    assert.deepEqual(
      outcomes.slice(0, 4),
      ['status', 'status', 'reset', 'client_closed'],
      'four transient failures',
    );
    // Then the retry's success and, whenever it finishes, the hung response completing at the partner.
    assert.deepEqual(outcomes.slice(4).map(String).sort(), ['200', 'delay']);
    const keys = new Set(firstPage.map((e) => e.idempotencyKey));
    assert.deepEqual(
      [...keys],
      [`fetch-records:fs-transient:${DATE}:page:0`],
      'every repeat carried the same key',
    );
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId: 'fs-transient' } }), 60);
  });

  it('a 429 with Retry-After in seconds is honoured: the retry does not come earlier', async () => {
    await createSource(db.prisma, 'fs-429', partner.url);
    partner.faults.add({ sourceId: 'fs-429', kind: 'status', status: 429, retryAfter: '2' });
    const result = await worker.run(() => run('fs-429'));
    assert.equal((result as { status: string }).status, 'succeeded');
    const [limited, retried] = partner.ledger.entries({ sourceId: 'fs-429' });
    assert.equal(limited?.status, 429);
    assert.equal(retried?.status, 200);
    assert.ok(at(retried.at) - at(limited.at) >= 1950, `retried after ${at(retried.at) - at(limited.at)} ms`);
  });

  it('a 503 with Retry-After: 0 (or a date already past) is retried at once, not given up', async () => {
    // Temporal takes a next-retry delay of zero as "none given": the policy's maximum interval, or
    // no retry at all when that is past the step's deadline. A partner asking for no wait at all
    // must still get its retry.
    await createSource(db.prisma, 'fs-503-now', partner.url);
    partner.faults.add({ sourceId: 'fs-503-now', kind: 'status', status: 503, retryAfter: '0' });
    const result = await worker.run(() => run('fs-503-now'));
    assert.equal((result as { status: string }).status, 'succeeded', `ended ${String(result)}`);
    const [limited, retried] = partner.ledger.entries({ sourceId: 'fs-503-now' });
    assert.deepEqual([limited?.status, retried?.status], [503, 200]);
  });

  it('a 503 with Retry-After as an HTTP-date is honoured: the retry comes at or after that date', async () => {
    await createSource(db.prisma, 'fs-503', partner.url);
    const retryAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3000);
    partner.faults.add({
      sourceId: 'fs-503',
      kind: 'status',
      status: 503,
      retryAfter: retryAt.toUTCString(),
    });
    const result = await worker.run(() => run('fs-503'));
    assert.equal((result as { status: string }).status, 'succeeded');
    const [limited, retried] = partner.ledger.entries({ sourceId: 'fs-503' });
    assert.equal(limited?.status, 503);
    assert.ok(
      retried && at(retried.at) >= retryAt.getTime() - 50,
      `retried at ${retried?.at}, asked ${retryAt.toISOString()}`,
    );
  });

  it('cancelling a run while a page request hangs aborts the request and the run ends cancelled', async () => {
    await createSource(db.prisma, 'fs-cancel', partner.url);
    partner.faults.add({ sourceId: 'fs-cancel', kind: 'delay', delayMs: 90_000 });
    await worker.run(async () => {
      const started = await startFetch(ctx, { sourceId: 'fs-cancel', date: DATE, requestedBy: 'test' });
      // Wait (bounded) until the partner holds the request.
      // The fault is used up (and dropped from the list) once the partner has taken the request.
      const held = () => !partner.faults.list().some((f) => f.sourceId === 'fs-cancel' && f.remaining > 0);
      for (let i = 0; i < 100 && !held(); i++) await sleep(100);
      assert.ok(held(), 'the partner is holding the request');
      await started.handle.cancel();
      const err = await started.handle.result().catch((e: unknown) => e);
      assert.ok(err instanceof WorkflowFailedError, String(err));
      assert.ok(err.cause instanceof CancelledFailure, String(err.cause));
    });
    assert.equal(
      partner.ledger.count({ sourceId: 'fs-cancel', fault: 'client_closed' }),
      1,
      'the partner saw the abort',
    );
    const row = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'fs-cancel' } });
    assert.equal(row.status, 'cancelled');
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId: 'fs-cancel' } }), 0);
  });
});
