// `durable-fetch status` judges runs failed for good by what is failed now (issue 37): an open
// dead letter needs attention; once a dead letter has been retried to success, or discarded,
// `status --check` passes at once, not a window later. How many failed in the window stays as
// information. Real runs on the shared Temporal dev server and a test worker, failed for good by
// the demo partner's fault injection (a 422), retried and discarded with the real CLI (in process)
// against a cloned database. Source ids start with `sfn-`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Client, WorkflowFailedError } from '@temporalio/client';
import { startFetch, type DurableFetchContext } from '../client/start-fetch.ts';
import type { FetchRecordsResult } from '../contract/types.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { detail, ok } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { temporalAddress, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let ctx: DurableFetchContext;
let env: Record<string, string>;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => 30 });
  client = await testClient();
  worker = await testWorker(testDeps(db.prisma));
  ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue };
  env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: worker.taskQueue,
  };
});

after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

const cli = (...args: string[]) => runCliInProcess(args, env);

interface StatusJson {
  healthy: boolean;
  problems: string[];
  jobs: { jobType: string; failed: number; deadLettersOpen: number }[];
  sources: { sourceId: string; finished: number; failed: number; deadLettersOpen: number }[];
}

async function status(): Promise<{ code: number | null; json: StatusJson }> {
  const r = await cli('status', '--check', '--json');
  return { code: r.code, json: JSON.parse(r.stdout) as StatusJson };
}

/** Runs (source, date) on the test worker while the partner refuses it for good; its dead letter's id. */
async function failRun(sourceId: string, date: string): Promise<string> {
  await createSource(db.prisma, sourceId, partner.url);
  partner.faults.add({ sourceId, date, kind: 'status', status: 422, times: 100 });
  await worker.run(async () => {
    const started = await startFetch(ctx, { sourceId, date, requestedBy: 'test' });
    const err = await started.handle.result().catch((e: unknown) => e);
    assert.ok(err instanceof WorkflowFailedError, `the run of ${sourceId} failed: ${String(err)}`);
  });
  const letter = await db.prisma.deadLetter.findFirstOrThrow({ where: { sourceId, status: 'open' } });
  return letter.id;
}

const sourceRow = (s: StatusJson, id: string) => s.sources.find((r) => r.sourceId === id);

describe('status: failed for good is judged by what is failed now', { timeout: 180_000 }, () => {
  it('an open dead letter fails --check; retried to success, --check passes at once, the window still counts it as information', async () => {
    const letter = await failRun('sfn-retried', '2026-08-01');
    const failing = await status();
    assert.equal(failing.code, 1, JSON.stringify(failing.json));
    assert.ok(
      failing.json.problems.includes('1 open dead letters (dlq list)'),
      failing.json.problems.join('\n'),
    );
    assert.equal(sourceRow(failing.json, 'sfn-retried')?.failed, 1);

    partner.faults.clear();
    await worker.run(async () => {
      ok(await cli('dlq', 'retry', letter, '--by', 'ops', '--reason', 'fixed'));
      const handle = client.workflow.getHandle('fetch/fetch-records/sfn-retried/2026-08-01');
      const result = (await handle.result()) as FetchRecordsResult;
      assert.equal(result.status, 'succeeded');
    });

    const healthy = await status();
    assert.equal(healthy.code, 0, JSON.stringify(healthy.json.problems));
    assert.deepEqual(healthy.json.problems, []);
    assert.equal(healthy.json.healthy, true);
    const row = sourceRow(healthy.json, 'sfn-retried');
    assert.deepEqual(
      [row?.finished, row?.failed, row?.deadLettersOpen],
      [1, 1, 0],
      'failed in the window: still 1, as information; failed for good now: none',
    );
    const job = healthy.json.jobs.find((j) => j.jobType === 'fetch-records');
    assert.deepEqual([job?.failed, job?.deadLettersOpen], [1, 0]);

    const text = await cli('status', '--check');
    assert.equal(text.code, 0, detail(text));
    assert.match(text.stdout, /^healthy at /);
  });

  it('a dead letter discarded by an operator no longer needs attention; a new open one does', async () => {
    const letter = await failRun('sfn-discarded', '2026-08-02');
    assert.equal((await status()).code, 1);
    ok(await cli('dlq', 'discard', letter, '--by', 'ops', '--reason', 'partner withdrew the day'));
    const discarded = await status();
    assert.equal(discarded.code, 0, JSON.stringify(discarded.json.problems));
    assert.deepEqual(
      [
        sourceRow(discarded.json, 'sfn-discarded')?.failed,
        sourceRow(discarded.json, 'sfn-discarded')?.deadLettersOpen,
      ],
      [1, 0],
    );

    await failRun('sfn-open', '2026-08-03');
    const open = await status();
    assert.equal(open.code, 1);
    assert.ok(open.json.problems.includes('1 open dead letters (dlq list)'), open.json.problems.join('\n'));
    assert.equal(sourceRow(open.json, 'sfn-open')?.deadLettersOpen, 1);
  });
});
