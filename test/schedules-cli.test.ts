// `durable-fetch schedules …` and `runs cancel` as users run them: the real CLI as a child
// process against the shared Temporal dev server, a cloned database, the demo partner and a test
// worker. The CLI is pointed at the worker's task queue (DURABLE_FETCH_TASK_QUEUE), so it sees that
// deployment's schedules. Assertions are on exit codes, stdout/stderr and the state left behind
// (FetchRun and fetched_record rows, outbox events, the partner's ledger, Temporal's schedules).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { createHttpClient } from '../activities/http.ts';
import { scheduleIdFor } from '../client/schedules.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import type { Prisma, PrismaClient } from '../prisma/generated/client.ts';
import { addDays, dateInTimeZone } from '../contract/business-date.ts';
import type { scheduledFetchWorkflow } from '../workflows/scheduled-fetch.ts';
import { lines, runCli, type CliResult } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import {
  deleteTestSchedules,
  temporalAddress,
  testClient,
  testWorker,
  type TestWorker,
} from './helpers/temporal.ts';

const RECORDS = 30; // per source and date: one partner page
const TERMINAL = ['succeeded', 'dead_lettered', 'cancelled', 'compensated'];

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
/** The CLI's environment: the test database and the worker's task queue. */
let env: Record<string, string>;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => RECORDS });
  client = await testClient();
  // A response timeout far beyond any test: only a cancellation ends a held partner request.
  const http = createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 120_000 });
  worker = await testWorker(testDeps(db.prisma, { http }));
  env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: worker.taskQueue,
  };
});

/** Schedule ids this file may have created (listing lags, so they are also deleted by id). */
const created = new Set<string>();
/** Task queues whose schedules this file owns. */
const queues = new Set<string>();

after(async () => {
  // Schedules outlive the test otherwise (the dev server is shared by the whole run).
  try {
    if (client) await deleteTestSchedules(client, queues, created);
  } finally {
    await client?.connection.close();
    await partner?.close();
    await db?.drop();
  }
});

/** Polls `condition` every 250 ms until it holds; fails naming `what` after `timeoutMs`. */
async function eventually(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}

const detail = (r: CliResult) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

/** Exit 0; returns stdout. */
function ok(result: CliResult): string {
  assert.equal(result.code, 0, detail(result));
  return result.stdout;
}

/** A user error: exit 1, nothing on stdout, exactly one `durable-fetch: …` line on stderr. */
function assertOneLineError(result: CliResult, pattern: RegExp): void {
  assert.equal(result.code, 1, detail(result));
  assert.equal(result.stdout, '', detail(result));
  const errLines = lines(result.stderr);
  assert.equal(errLines.length, 1, detail(result));
  assert.doesNotMatch(result.stderr, /^\s+at /m, detail(result));
  assert.match(errLines[0]!, /^durable-fetch: /);
  assert.match(errLines[0]!, pattern);
}

function json<T>(result: CliResult): T {
  return JSON.parse(ok(result)) as T;
}

const day = (date: string) => new Date(`${date}T00:00:00Z`);

async function scheduledSource(
  prisma: PrismaClient,
  sourceId: string,
  schedule: Prisma.InputJsonObject,
): Promise<void> {
  await createSource(prisma, sourceId, partner.url);
  await prisma.source.update({ where: { id: sourceId }, data: { schedule } });
}

/** Trigger workflows (`scheduledFetchWorkflow`) of `sourceId` visible so far, optionally only running ones. */
async function scheduledStarts(sourceId: string, running = false): Promise<number> {
  let n = 0;
  const status = running ? ` AND ExecutionStatus = 'Running'` : '';
  for await (const _ of client.workflow.list({
    query: `WorkflowType = 'scheduledFetchWorkflow' AND FetchSource = '${sourceId}'${status}`,
  })) {
    n++;
  }
  return n;
}

/** What a backfill or a run leaves behind for `sourceId`, to compare before and after. */
async function effects(sourceId: string, dates: readonly string[]) {
  const runs = await db.prisma.fetchRun.findMany({ where: { sourceId }, orderBy: { businessDate: 'asc' } });
  return {
    runs: runs.map((r) => [r.businessDate.toISOString().slice(0, 10), r.status, r.id]),
    records: await db.prisma.fetchedRecord.count({ where: { sourceId } }),
    outbox: await db.prisma.outboxEvent.count({ where: { aggregateId: { in: runs.map((r) => r.id) } } }),
    ledger: dates.map((date) => partner.ledger.count({ sourceId, date })),
  };
}

describe('schedules cli', { timeout: 600_000 }, () => {
  before(() => {
    queues.add(worker.taskQueue);
  });

  it('backfill over three days runs those three dates; the same backfill again creates nothing new', async () => {
    const sourceId = 'scli-backfill';
    const scheduleId = scheduleIdFor(worker.taskQueue, { id: sourceId, jobType: 'fetch-records' });
    const dates = ['2026-10-01', '2026-10-02', '2026-10-03'];
    await scheduledSource(db.prisma, sourceId, { cron: '0 2 * * *', dateOffsetDays: -1 });

    created.add(scheduleId);
    const synced = ok(await runCli(['schedules', 'sync'], env));
    assert.match(synced, new RegExp(`^created\\s+${scheduleId}$`, 'm'));

    const backfill = ['schedules', 'backfill', sourceId, '--from', dates[0]!, '--to', dates[2]!, '--json'];
    type Backfill = {
      scheduleId: string;
      from: string;
      to: string;
      runs: { date: string; status: string }[];
    };
    const first = await worker.run(async () => {
      const first = await runCli(backfill, env, 240_000);
      const report = json<Backfill>(first);
      assert.equal(report.scheduleId, scheduleId);
      assert.deepEqual(
        report.runs,
        dates.map((date) => ({ date, status: 'succeeded' })),
      );
      const done = await effects(sourceId, dates);
      assert.deepEqual(
        done.runs.map(([date, status]) => [date, status]),
        dates.map((date) => [date, 'succeeded']),
      );
      for (const date of dates) {
        assert.equal(
          await db.prisma.fetchedRecord.count({ where: { sourceId, businessDate: day(date) } }),
          RECORDS,
          `the partner's records of ${date} are stored`,
        );
        assert.ok(partner.ledger.count({ sourceId, date, status: 200 }) >= 1, `the partner served ${date}`);
      }
      assert.equal(done.records, 3 * RECORDS);
      assert.ok(done.outbox > 0, 'the runs wrote outbox events');
      const startsBefore = await scheduledStarts(sourceId);

      // The same backfill again: every date is done, so it reports them at once…
      const again = await runCli(backfill, env, 240_000);
      assert.deepEqual(
        json<Backfill>(again).runs,
        dates.map((date) => ({ date, status: 'succeeded' })),
      );
      // …while Temporal still starts its three trigger workflows: let them end (they join the
      // succeeded keys) before looking for effects.
      await eventually(
        async () => (await scheduledStarts(sourceId)) >= startsBefore + 3,
        'the second backfill started its triggers',
      );
      await eventually(
        async () => (await scheduledStarts(sourceId, true)) === 0,
        'the triggers of the second backfill ended',
      );
      assert.deepEqual(await effects(sourceId, dates), done, 'nothing new: runs, records, outbox, partner');
      // Each date ran once; the second backfill's triggers joined the succeeded keys.
      const outcomes: string[] = [];
      for await (const wf of client.workflow.list({
        query: `WorkflowType = 'scheduledFetchWorkflow' AND FetchSource = '${sourceId}'`,
      })) {
        const handle = client.workflow.getHandle<typeof scheduledFetchWorkflow>(wf.workflowId, wf.runId);
        const result = await handle.result();
        outcomes.push(`${result.businessDate} ${result.outcome}`);
      }
      assert.deepEqual(
        outcomes.sort(),
        dates.flatMap((date) => [`${date} joined`, `${date} ran`]),
      );
      return first;
    });

    // Human output: the progress on stderr, a table of the dates on stdout.
    const human = await runCli(backfill.slice(0, -1), env, 240_000);
    assert.match(ok(human), /^DATE\s+STATUS$/m);
    for (const date of dates) assert.match(human.stdout, new RegExp(`^${date}\\s+succeeded$`, 'm'));
    assert.deepEqual(lines(human.stderr), [`backfill ${scheduleId}: 3/3 dates done`]);

    // Progress goes to stderr in JSON mode too (stdout stays one JSON document).
    const progress = lines(first.stderr);
    assert.ok(progress.length >= 1, `progress lines on stderr, got: ${first.stderr}`);
    for (const line of progress) {
      assert.match(line, new RegExp(`^backfill ${scheduleId}: [0-3]/3 dates done$`));
    }
    assert.equal(progress.at(-1), `backfill ${scheduleId}: 3/3 dates done`);
  });

  it('list, describe, pause, resume and trigger through the CLI; bad input gets one line', async () => {
    const sourceId = 'scli-ops';
    const scheduleId = scheduleIdFor(worker.taskQueue, { id: sourceId, jobType: 'fetch-records' });
    // Fires once a year: every start in this test is a manual one.
    await scheduledSource(db.prisma, sourceId, { cron: '0 3 1 1 *', dateOffsetDays: -1 });
    created.add(scheduleId);
    ok(await runCli(['schedules', 'sync'], env));

    // Listing reads Temporal's visibility store, which lags behind a create.
    type Summary = { scheduleId: string; state: { paused: boolean; note?: string } };
    await eventually(
      async () =>
        json<Summary[]>(await runCli(['schedules', 'list', '--json'], env)).some(
          (s) => s.scheduleId === scheduleId,
        ),
      'list --json shows the schedule',
    );
    const listed = ok(await runCli(['schedules', 'list'], env));
    assert.match(listed, /^ID\s+PAUSED\s+NEXT\s+LAST$/m);
    assert.match(listed, new RegExp(`^${scheduleId}\\s+no\\s`, 'm'));

    // Pause with a reason: describe shows it at once, list once visibility has caught up.
    type Description = { state: { paused: boolean; note?: string } };
    const paused = ok(await runCli(['schedules', 'pause', sourceId, '--reason', 'maint'], env));
    assert.equal(paused.trim(), `paused ${scheduleId}: maint`);
    const described = json<Description>(await runCli(['schedules', 'describe', sourceId, '--json'], env));
    assert.deepEqual([described.state.paused, described.state.note], [true, 'maint']);
    const human = ok(await runCli(['schedules', 'describe', sourceId], env));
    assert.match(human, new RegExp(`^id\\s+${scheduleId}$`, 'm'));
    assert.match(human, /^paused\s+yes: maint$/m);
    await eventually(
      async () =>
        new RegExp(`^${scheduleId}\\s+yes: maint\\s`, 'm').test(ok(await runCli(['schedules', 'list'], env))),
      'list shows the pause and its reason',
    );

    assert.equal(ok(await runCli(['schedules', 'resume', sourceId], env)).trim(), `resumed ${scheduleId}`);
    const resumed = json<Description>(await runCli(['schedules', 'describe', scheduleId, '--json'], env));
    assert.equal(resumed.state.paused, false);

    // Trigger: a run now, for today (UTC) plus the offset, that succeeds; one FetchRun.
    await worker.run(async () => {
      const before = addDays(dateInTimeZone(new Date(), 'UTC'), -1);
      assert.equal(
        ok(await runCli(['schedules', 'trigger', sourceId], env)).trim(),
        `triggered ${scheduleId}`,
      );
      const after = addDays(dateInTimeZone(new Date(), 'UTC'), -1);
      await eventually(
        async () => (await db.prisma.fetchRun.findFirst({ where: { sourceId } }))?.status === 'succeeded',
        'the triggered run succeeded',
        120_000,
      );
      await eventually(
        async () => (await scheduledStarts(sourceId, true)) === 0,
        'the trigger workflow ended',
      );
      const runs = await db.prisma.fetchRun.findMany({ where: { sourceId } });
      assert.equal(runs.length, 1);
      const date = runs[0]!.businessDate.toISOString().slice(0, 10);
      assert.ok([before, after].includes(date), `business date ${date}, expected ${before}`);
      assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), RECORDS);
    });

    // Bad input: one line, exit 1 (commander's own errors: non-zero and a usage hint).
    assertOneLineError(
      await runCli(['schedules', 'describe', 'nope'], env),
      new RegExp(`no schedule '${worker.taskQueue}/fetch-records/nope' .*schedules sync`),
    );
    const noReason = await runCli(['schedules', 'pause', sourceId], env);
    assert.notEqual(noReason.code, 0, detail(noReason));
    assert.match(noReason.stderr, /required option '--reason <text>' not specified/);
    assertOneLineError(
      await runCli(['schedules', 'backfill', sourceId, '--from', '2026-10-03', '--to', '2026-10-01'], env),
      /--to is before --from/,
    );
    // The future-date policy (default: nothing after today) holds for backfills too.
    assertOneLineError(
      await runCli(['schedules', 'backfill', sourceId, '--from', '2026-10-01', '--to', '2999-01-01'], env),
      /--to: date 2999-01-01 is in the future/,
    );
    const badDate = await runCli(
      ['schedules', 'backfill', sourceId, '--from', '2026-02-30', '--to', '2026-03-01'],
      env,
    );
    assert.notEqual(badDate.code, 0, detail(badDate));
    assert.match(badDate.stderr, /expected a date YYYY-MM-DD/);
    const still = json<Description>(await runCli(['schedules', 'describe', sourceId, '--json'], env));
    assert.equal(still.state.paused, false, 'a refused pause changed nothing');

    // Help needs no configuration at all.
    const help = await runCli(['schedules', '--help'], { DATABASE_URL: 'mysql://nope' });
    assert.equal(help.code, 0, detail(help));
    for (const command of ['sync', 'list', 'describe', 'pause', 'resume', 'trigger', 'backfill']) {
      assert.match(help.stdout, new RegExp(`^\\s+${command}\\b`, 'm'), `schedules --help lists ${command}`);
    }
    assert.match(help.stdout, /dateOffsetDays/);
    const backfillHelp = await runCli(['schedules', 'backfill', '--help'], { DATABASE_URL: 'mysql://nope' });
    assert.equal(backfillHelp.code, 0, detail(backfillHelp));
    assert.match(backfillHelp.stdout, /^Usage: durable-fetch schedules backfill \[options\] <id>/);
    for (const option of ['--from <date>', '--to <date>', '--overlap <policy>', '--no-wait', '--json']) {
      assert.ok(backfillHelp.stdout.includes(option), `backfill --help mentions ${option}`);
    }
  });
});

describe('schedules sync cli: dry run and invalid config', { timeout: 300_000 }, () => {
  // A database and task queue of their own: sync sees only these sources, and no worker is needed.
  let own: TestDatabase;
  let ownEnv: Record<string, string>;
  let taskQueue: string;

  before(async () => {
    own = await useTestDatabase();
    taskQueue = `scli-${randomUUID()}`;
    queues.add(taskQueue);
    ownEnv = {
      DATABASE_URL: own.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
    };
  });

  after(async () => {
    await own?.drop();
  });

  const notFound = async (sourceId: string) => {
    created.add(scheduleIdFor(taskQueue, { id: sourceId, jobType: 'fetch-records' }));
    assertOneLineError(
      await runCli(['schedules', 'describe', sourceId], ownEnv),
      new RegExp(`no schedule '${taskQueue}/fetch-records/${sourceId}'`),
    );
  };

  it('sync --dry-run --json reports `created` and changes nothing', async () => {
    await scheduledSource(own.prisma, 'scli-dry', { every: '1h' });
    created.add(scheduleIdFor(taskQueue, { id: 'scli-dry', jobType: 'fetch-records' }));
    const report = json<{ dryRun: boolean; changes: unknown[] }>(
      await runCli(['schedules', 'sync', '--dry-run', '--json'], ownEnv),
    );
    assert.deepEqual(report, {
      dryRun: true,
      changes: [
        {
          scheduleId: scheduleIdFor(taskQueue, { id: 'scli-dry', jobType: 'fetch-records' }),
          sourceId: 'scli-dry',
          change: 'created',
        },
      ],
    });
    await notFound('scli-dry');
    const human = ok(await runCli(['schedules', 'sync', '--dry-run'], ownEnv));
    assert.match(human, /^1 schedule would be changed, 0 unchanged$/m);
    await notFound('scli-dry');
  });

  it('an invalid schedule config makes sync exit 1 with one line naming the source, and creates nothing', async () => {
    await scheduledSource(own.prisma, 'scli-bad', { cron: '0 2 * * *', every: '1h' });
    assertOneLineError(
      await runCli(['schedules', 'sync'], ownEnv),
      /source 'scli-bad': schedule .*exactly one of "cron" or "every"/,
    );
    // Not even the valid source's schedule was created.
    await notFound('scli-dry');
    await notFound('scli-bad');

    await own.prisma.source.update({ where: { id: 'scli-bad' }, data: { schedule: { every: 'often' } } });
    assertOneLineError(
      await runCli(['schedules', 'sync'], ownEnv),
      /source 'scli-bad': schedule .*a duration such as 30s/,
    );
    await notFound('scli-dry');
    await notFound('scli-bad');
  });
});

describe('runs cancel cli', { timeout: 300_000 }, () => {
  it('cancels a run held in a slow partner call: it ends cancelled; a second cancel says it already ended', async () => {
    const sourceId = 'scli-cancel';
    const date = '2026-10-05';
    const workflowId = `fetch/fetch-records/${sourceId}/${date}`;
    await createSource(db.prisma, sourceId, partner.url);
    partner.faults.add({ sourceId, kind: 'delay', delayMs: 90_000 });
    await worker.run(async () => {
      ok(await runCli(['run', sourceId, '--date', date], env));
      // The fault is used up once the partner holds the request.
      const held = () => !partner.faults.list().some((f) => f.sourceId === sourceId && f.remaining > 0);
      await eventually(held, 'the partner holds the request');
      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      assert.ok(!TERMINAL.includes(run.status), `run still going (${run.status})`);

      const cancel = await runCli(['runs', 'cancel', `${sourceId}/${date}`], env);
      assert.equal(ok(cancel).trim(), `cancellation requested for ${workflowId}`);
      await eventually(
        async () =>
          (await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: run.id } })).status === 'cancelled',
        'the run ends cancelled',
        120_000,
      );
    });
    assert.equal(
      partner.ledger.count({ sourceId, fault: 'client_closed' }),
      1,
      'the held request was aborted',
    );
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), 0);

    const again = await runCli(['runs', 'cancel', workflowId], env);
    assert.equal(ok(again).trim(), `${workflowId} already ended (cancelled); nothing to cancel`);
    assertOneLineError(await runCli(['runs', 'cancel', 'nope/2026-01-01'], env), /no run 'nope\/2026-01-01'/);
  });
});
