// The Temporal Web UI as an operator uses it: a run is found by filtering on our search
// attributes in a real headless browser, and a cancellation requested the way the UI requests it
// (RequestCancelWorkflowExecution) ends the run `cancelled` in our database too.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import type { Browser } from 'playwright-core';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { launchChromium } from './helpers/browser.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const OUTPUT = path.join(PROJECT_ROOT, 'test-results', 'web-ui');
const SOURCE = 'webui-src';
const DATE = '2026-11-20';

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let browser: Browser;

before(async () => {
  [db, partner, client, browser] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => 120 }),
    testClient(),
    launchChromium(),
  ]);
  worker = await testWorker(testDeps(db.prisma));
  await mkdir(OUTPUT, { recursive: true });
});

after(async () => {
  await browser?.close();
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

describe('web ui', () => {
  it('an operator finds a running run by FetchSource in the Web UI; cancelling it ends it cancelled in the database', async () => {
    const ui = process.env.DF_TEST_TEMPORAL_UI_URL;
    assert.ok(ui, 'test/run.ts starts the dev server with its Web UI and sets DF_TEST_TEMPORAL_UI_URL');
    await createSource(db.prisma, SOURCE, partner.url, { pageSize: 50 });
    // Hold the run in its second page so it is still running while we look and cancel.
    partner.faults.add({ sourceId: SOURCE, kind: 'delay', delayMs: 60_000, afterRequests: 1, times: 5 });
    await worker.run(async () => {
      const started = await startFetch(
        { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue },
        { sourceId: SOURCE, date: DATE },
      );
      await waitFor(
        async () => (await db.prisma.fetchRun.findFirst({ where: { sourceId: SOURCE } }))?.pagesStored === 1,
        'first page stored',
      );

      const page = await browser.newPage();
      const query = `FetchSource="${SOURCE}"`;
      const url = `${ui}/namespaces/default/workflows?query=${encodeURIComponent(query)}`;
      // Visibility is eventually consistent: reload until the run is listed.
      await waitFor(
        async () => {
          await page.goto(url, { waitUntil: 'domcontentloaded' });
          return page
            .getByText(started.workflowId)
            .first()
            .waitFor({ timeout: 5_000 })
            .then(
              () => true,
              () => false,
            );
        },
        'the run listed in the Web UI',
        60_000,
      );
      await page.screenshot({ path: path.join(OUTPUT, 'filter-by-fetch-source.png'), fullPage: true });
      // The run's own row says it is running.
      const row = page.getByRole('row').filter({ hasText: started.workflowId });
      assert.match(await row.first().innerText(), /running/i);
      await page.close();

      // The UI's "Request cancellation" is RequestCancelWorkflowExecution on the run's workflow id.
      await client.workflow.getHandle(started.workflowId).cancel();
      await waitFor(
        async () =>
          (await db.prisma.fetchRun.findFirst({ where: { sourceId: SOURCE } }))?.status === 'cancelled',
        'the run cancelled in the database',
        60_000,
      );
      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: SOURCE } });
      assert.equal(run.pagesStored, 1);
      // The workflow itself closes as cancelled right after recording it.
      await assert.rejects(
        started.handle.result(),
        (err: Error) => (err.cause as Error | undefined)?.name === 'CancelledFailure',
      );
      assert.equal((await started.handle.describe()).status.name, 'CANCELLED');
    });
  });
});
