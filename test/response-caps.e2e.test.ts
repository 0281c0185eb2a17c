// The response byte cap end to end, on the shared Temporal server, a cloned database and the demo
// partner over real sockets: a partner page of 50 MB dead-letters the run without being read whole.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Client, WorkflowFailedError } from '@temporalio/client';
import { createHttpClient } from '../activities/http.ts';
import { pageKeyFor } from '../workflows/business-key.ts';
import { startFetch, type DurableFetchContext } from '../client/start-fetch.ts';
import { encodeCursor } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { loadConfig } from '../worker/config.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const DATE = '2026-04-02';
const BODY_BYTES = 50_000_000;
let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let ctx: DurableFetchContext;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => 120 });
  client = await testClient();
  // The client as configured by default (HTTP_MAX_RESPONSE_BYTES unset: 16 MiB).
  worker = await testWorker(testDeps(db.prisma, { http: createHttpClient(loadConfig({}).http) }));
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

void describe('response caps', () => {
  void it('a partner page of 50 MB dead-letters the run as InvalidResponse RESPONSE_TOO_LARGE; nothing of it is staged or stored', async () => {
    const sourceId = 'response-caps-oversize';
    await createSource(db.prisma, sourceId, partner.url);
    // Stored pages hold 100 records (two partner requests of 50); the second stored page starts at
    // record 101, and that partner page is the huge one, whichever attempt asks for it.
    const hugeCursor = encodeCursor(101);
    partner.faults.add({ sourceId, cursor: hugeCursor, kind: 'oversize', bytes: BODY_BYTES, times: 5 });
    const err = await worker.run(async () => {
      const started = await startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
      return started.handle.result().catch((e: unknown) => e);
    });
    assert.ok(err instanceof WorkflowFailedError, String(err));

    const letter = await db.prisma.deadLetter.findFirstOrThrow({ where: { sourceId } });
    assert.deepEqual([letter.errorType, letter.errorCode], ['InvalidResponse', 'RESPONSE_TOO_LARGE']);
    assert.match(letter.errorMessage, /response body larger than 16777216 bytes/);
    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
    assert.deepEqual([run.status, run.errorClass], ['dead_lettered', 'InvalidResponse']);

    // The first page is stored; nothing of the huge one is staged or stored.
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), 100);
    assert.equal(await db.prisma.fetchedPage.count({ where: { key: pageKeyFor(sourceId, DATE, 1) } }), 0);

    // Asked once (non-retryable), and the client stopped reading long before the body's end.
    await waitFor(() => partner.ledger.count({ sourceId, fault: 'oversize' }) > 0, 'the oversize entry');
    const huge = partner.ledger.entries({ sourceId, cursor: hugeCursor });
    assert.deepEqual(
      huge.map((e) => [e.status, e.fault, e.bodyBytes]),
      [[200, 'oversize', BODY_BYTES]],
    );
    const sent = huge[0]?.bytesSent ?? BODY_BYTES;
    assert.ok(sent < BODY_BYTES, `the partner sent ${sent} of ${BODY_BYTES} bytes`);
  });
});
