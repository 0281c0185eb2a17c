// A cancellation that races an activity failure (R9): the run waits on a partner call; the
// operator cancels it (the Web UI's RequestCancelWorkflowExecution) and the call's response
// timeout fires just as the cancellation reaches the activity, so the activity ends with a
// Timeout failure instead of being cancelled. The interleaving is made deterministic in the HTTP
// layer the activities are given: the partner call (real, over a socket) is not aborted by the
// cancellation; instead it fails with the Timeout failure the client's response timeout throws,
// at the moment the cancellation arrives. The run must still end `cancelled`, no dead letter:
// with its page fetches as local activities (the default) and as activity tasks.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { failure } from '../activities/errors.ts';
import { createHttpClient, type HttpClient } from '../activities/http.ts';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { testClient, testWorker } from './helpers/temporal.ts';

const DATE = '2026-04-04';

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;

before(async () => {
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => 120 }),
    testClient(),
  ]);
});
after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/**
 * The project's HTTP client, except that a call's cancellation makes it fail as its response
 * timeout would — the timeout "firing" exactly as the cancel is delivered.
 */
function timingOutOnCancel(http: HttpClient): HttpClient {
  const raced = <T>(signal: AbortSignal, what: string, call: (own: AbortSignal) => Promise<T>) => {
    const own = new AbortController();
    return new Promise<T>((resolve, reject) => {
      signal.addEventListener(
        'abort',
        () => {
          reject(failure('Timeout', 'UND_ERR_HEADERS_TIMEOUT', `${what}: timed out`));
          own.abort();
        },
        { once: true },
      );
      call(own.signal).then(resolve, reject);
    });
  };
  return {
    ...http,
    getJson: (url, opts) => raced(opts.signal, opts.what, (signal) => http.getJson(url, { ...opts, signal })),
    postJson: (url, body, opts) =>
      raced(opts.signal, opts.what, (signal) => http.postJson(url, body, { ...opts, signal })),
  };
}

describe('cancel racing a timeout', () => {
  for (const local of [true, false]) {
    const what = local ? 'a local fetch (the default)' : 'an activity task';
    it(`a cancel delivered while the awaited partner call times out ends the run cancelled, not dead-lettered: ${what}`, async () => {
      const sourceId = local ? 'race-local' : 'race-task';
      await createSource(db.prisma, sourceId, partner.url, { pageSize: 50, localFetch: local });
      // The second page hangs: the run is waiting on that call when the operator cancels.
      partner.faults.add({ sourceId, kind: 'delay', delayMs: 60_000, afterRequests: 1 });
      const http = timingOutOnCancel(
        createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 60_000 }),
      );
      const worker = await testWorker(testDeps(db.prisma, { http }));
      const handle = await worker.run(async () => {
        const started = await startFetch(
          { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue },
          { sourceId, date: DATE, requestedBy: 'test' },
        );
        await waitFor(
          () => partner.faults.list().every((f) => f.sourceId !== sourceId),
          'the partner holding the second page',
          60_000,
        );
        await started.handle.cancel();
        await started.handle.result().then(
          () => assert.fail('the run must not succeed'),
          () => undefined,
        );
        return started.handle;
      });

      if (!local) {
        // The interleaving happened: the awaited activity ended with Timeout after the cancel
        // request. (A local fetch's attempts are inside its workflow task: no event shows them.)
        const events = (await handle.fetchHistory()).events ?? [];
        const cancelAt = events.findIndex((e) => e.activityTaskCancelRequestedEventAttributes);
        const failedAt = events.findIndex(
          (e, i) =>
            i > cancelAt &&
            e.activityTaskFailedEventAttributes?.failure?.applicationFailureInfo?.type === 'Timeout',
        );
        assert.ok(
          cancelAt >= 0 && failedAt > cancelAt,
          'the activity failed with Timeout after the cancel request',
        );
      }

      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      assert.deepEqual([run.status, run.errorClass, run.pagesStored], ['cancelled', null, 1]);
      assert.equal(await db.prisma.deadLetter.count({ where: { fetchRunId: run.id } }), 0, 'no dead letter');
      assert.equal((await handle.describe()).status.name, 'CANCELLED');
    });
  }
});
