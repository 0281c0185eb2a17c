// `durable-fetch dlq list|show|retry|discard` as operators run them (R11): real runs
// that fail for good through the demo partner's fault injection (a 422 is non-retryable) on the
// shared Temporal dev server and a test worker, each writing its dead letter; then the real CLI as
// a child process against the same cloned database, pointed at the worker's task queue
// (DURABLE_FETCH_TASK_QUEUE). Assertions are on exit codes, output and the state left behind
// (dead letters, audit entries, runs, records, outbox events, the partner's ledger).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type Client, WorkflowFailedError } from '@temporalio/client';
import { launchFetch, prepareFetch, startFetch, type DurableFetchContext } from '../client/start-fetch.ts';
import { encodeCursor } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import type { DeadLetter } from '../prisma/generated/client.ts';
import type { FetchRecordsResult } from '../contract/types.ts';
import { assertOneLineError, cells, detail, fieldsOf, json, lines, ok, runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { insertDeadLetter } from './helpers/job-rows.ts';
import { temporalAddress, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const UI = 'http://ui.example.test:8080';
/** Records per (source, date) at the partner: 3 stored pages of 100 (the sources' page size). */
const RECORDS = 300;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let ctx: DurableFetchContext;
/** The CLI's environment: the test database, Temporal, the worker's task queue, a Web UI base. */
let env: Record<string, string>;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => RECORDS });
  client = await testClient();
  worker = await testWorker(testDeps(db.prisma));
  ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue };
  env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: worker.taskQueue,
    TEMPORAL_UI_URL: UI,
  };
});

after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

const workflowIdOf = (sourceId: string, date: string) => `fetch/fetch-records/${sourceId}/${date}`;
const letterOf = (id: string) => db.prisma.deadLetter.findUniqueOrThrow({ where: { id } });
const auditOf = (id: string) =>
  db.prisma.auditEntry.findMany({
    where: { targetType: 'dead_letter', targetId: id },
    orderBy: { id: 'asc' },
  });
const lettersOfSource = (sourceId: string) =>
  db.prisma.deadLetter.findMany({ where: { sourceId }, orderBy: { createdAt: 'asc' } });

/**
 * Runs the key (source, date) on the test worker while the partner refuses it for good (or as
 * `faults` says), and returns the Temporal run id of its first execution (the one that claimed the
 * run; with `pagesPerExecution`, later executions continue it).
 */
async function failRun(
  sourceId: string,
  date: string,
  status = 422,
  faults: { cursor?: string } = {},
  pagesPerExecution?: number,
): Promise<string> {
  if (!(await db.prisma.source.findUnique({ where: { id: sourceId } })))
    await createSource(db.prisma, sourceId, partner.url);
  partner.faults.add({ sourceId, date, kind: 'status', status, times: 100, ...faults });
  const prepared = await prepareFetch(ctx, { sourceId, date, requestedBy: 'test' });
  const started = await launchFetch(ctx, {
    ...prepared,
    input: { ...prepared.input, ...(pagesPerExecution === undefined ? {} : { pagesPerExecution }) },
  });
  const err = await started.handle.result().catch((e: unknown) => e);
  assert.ok(err instanceof WorkflowFailedError, `the run of ${sourceId}/${date} failed: ${String(err)}`);
  return started.runId;
}

interface LetterJson {
  id: string;
  sourceId: string;
  businessDate: string;
  businessKey: string;
  errorType: string;
  errorCode: string | null;
  status: string;
  createdAt: string;
}

interface TimelineJson {
  activity: string;
  activityId: string;
  attempt: number;
  scheduledAt: string;
  startedAt: string | null;
  endedAt: string | null;
  outcome: string;
  failure?: { type: string; message: string };
}

interface ShowJson extends LetterJson {
  workflowId: string;
  workflowRunId: string;
  errorMessage: string;
  attempts: number;
  run: { id: string; status: string; pagesStored: number };
  audit: { id: string; actor: string; action: string; reason: string | null; details: unknown }[];
  timeline?: TimelineJson[];
  timelineRunId?: string;
  timelineNote?: string;
  webUi: string | null;
}

describe('dlq cli: help', { concurrency: true }, () => {
  // An invalid DATABASE_URL would fail config validation: help must not get that far.
  const noConfig = { DATABASE_URL: 'mysql://nope' };

  it('dlq --help lists its commands; each has a description and --help with --json', async () => {
    const top = await runCli(['--help'], noConfig);
    assert.equal(top.code, 0, detail(top));
    assert.match(top.stdout, /^\s+dlq\b.*dead letters/m);

    const group = await runCli(['dlq', '--help'], noConfig);
    assert.equal(group.code, 0, detail(group));
    assert.match(group.stdout, /^Usage: durable-fetch dlq \[options\] \[command\]/);
    assert.match(group.stdout, /Statuses: open,\s+retried, discarded, superseded/);
    for (const command of ['list', 'show', 'retry', 'discard']) {
      assert.match(group.stdout, new RegExp(`^\\s+${command} \\[options\\].*\\S`, 'm'));
      const help = await runCli(['dlq', command, '--help'], noConfig);
      assert.equal(help.code, 0, detail(help));
      assert.match(help.stdout, new RegExp(`^Usage: durable-fetch dlq ${command} \\[options\\]`));
      assert.match(help.stdout, /--json/);
    }
    const list = await runCli(['dlq', 'list', '--help'], noConfig);
    for (const option of [
      '--job <type>',
      '--source <id>',
      '--error-type <type>',
      '--since <when>',
      '--status <status>',
      '--limit <n>',
    ])
      assert.ok(list.stdout.includes(option), `list --help names ${option}`);
    const retry = await runCli(['dlq', 'retry', '--help'], noConfig);
    assert.match(retry.stdout, /--override <key=value>.*pageSize,\s+pagesPerExecution/s);
    assert.match(retry.stdout, /--reason <text>/);
    assert.match(retry.stdout, /--by <who>/);
    const discard = await runCli(['dlq', 'discard', '--help'], noConfig);
    assert.match(discard.stdout, /--reason <text>/);
    assert.match(discard.stdout, /--by <who>/);
  });
});

describe('dlq cli: dead letters of failed runs', { timeout: 300_000 }, () => {
  const DATE_A = '2026-10-01';
  const DATE_C = '2026-10-02';
  let runA: string;
  let runC: string;
  let letterA: DeadLetter;
  let letterB: DeadLetter;
  let letterC: DeadLetter;
  let betweenBAndC: Date;

  before(async () => {
    await worker.run(async () => {
      runA = await failRun('dlq-cli-a', DATE_A);
      await failRun('dlq-cli-b', DATE_A);
      await new Promise((resolve) => setTimeout(resolve, 50));
      betweenBAndC = new Date();
      await new Promise((resolve) => setTimeout(resolve, 50));
      runC = await failRun('dlq-cli-a', DATE_C, 401);
    });
    const [a, c] = await lettersOfSource('dlq-cli-a');
    const [b] = await lettersOfSource('dlq-cli-b');
    assert.ok(a && b && c, 'three dead letters');
    [letterA, letterB, letterC] = [a, b, c];
  });

  it('a run that fails for good writes one dead letter, and its FetchRun is dead_lettered', async () => {
    const run = await db.prisma.fetchRun.findFirstOrThrow({
      where: { sourceId: 'dlq-cli-a', businessDate: new Date(`${DATE_A}T00:00:00Z`) },
    });
    assert.equal(run.status, 'dead_lettered');
    assert.equal(run.errorClass, 'InvalidInput');
    assert.equal((await db.prisma.deadLetter.findMany({ where: { fetchRunId: run.id } })).length, 1);
    assert.deepEqual(
      {
        ...letterA,
        id: undefined,
        firstFailedAt: undefined,
        lastFailedAt: undefined,
        createdAt: undefined,
        updatedAt: undefined,
      },
      {
        id: undefined,
        fetchRunId: run.id,
        jobType: 'fetch-records',
        sourceId: 'dlq-cli-a',
        businessDate: new Date(`${DATE_A}T00:00:00Z`),
        workflowId: workflowIdOf('dlq-cli-a', DATE_A),
        workflowRunId: runA,
        errorType: 'InvalidInput',
        errorCode: 'HTTP_422',
        errorMessage: 'partner dlq-cli-a records: rejected with status 422: "injected status 422"',
        attempts: 1,
        firstFailedAt: undefined,
        lastFailedAt: undefined,
        status: 'open',
        replayId: null,
        closedAt: null,
        closedBy: null,
        closeReason: null,
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    assert.equal(letterA.firstFailedAt.getTime(), letterA.lastFailedAt.getTime(), 'first failure = last');
    assert.ok(Math.abs(letterA.lastFailedAt.getTime() - (run.finishedAt?.getTime() ?? 0)) < 5_000);
    assert.deepEqual(
      [letterC.errorType, letterC.errorCode, letterC.workflowRunId, letterC.attempts],
      ['PermissionDenied', 'HTTP_401', runC, 1],
    );
    // The partner was asked once: a 422 and a 401 are not retried.
    assert.equal(partner.ledger.count({ sourceId: 'dlq-cli-a', date: DATE_A }), 1);
  });

  it('list: newest first, filtered by source, error type, time and status; --json', async () => {
    const bySource = json<LetterJson[]>(
      await runCli(['dlq', 'list', '--source', 'dlq-cli-a', '--json'], env),
    );
    assert.deepEqual(
      bySource.map((l) => [
        l.id,
        l.sourceId,
        l.businessDate,
        l.businessKey,
        l.errorType,
        l.errorCode,
        l.status,
      ]),
      [
        [
          letterC.id,
          'dlq-cli-a',
          DATE_C,
          `fetch-records:dlq-cli-a:${DATE_C}`,
          'PermissionDenied',
          'HTTP_401',
          'open',
        ],
        [
          letterA.id,
          'dlq-cli-a',
          DATE_A,
          `fetch-records:dlq-cli-a:${DATE_A}`,
          'InvalidInput',
          'HTTP_422',
          'open',
        ],
      ],
    );
    assert.equal(bySource[0]!.createdAt, letterC.createdAt.toISOString());

    const ids = async (args: string[]) =>
      json<LetterJson[]>(await runCli(['dlq', 'list', ...args, '--json'], env)).map((l) => l.id);
    assert.deepEqual(await ids(['--error-type', 'InvalidInput']), [letterB.id, letterA.id]);
    assert.deepEqual(await ids(['--error-type', 'PermissionDenied', '--source', 'dlq-cli-a']), [letterC.id]);
    assert.deepEqual(await ids(['--source', 'dlq-cli-a', '--limit', '1']), [letterC.id]);
    assert.deepEqual(await ids(['--since', betweenBAndC.toISOString()]), [letterC.id]);
    assert.deepEqual(await ids(['--since', '1h', '--error-type', 'InvalidInput']), [letterB.id, letterA.id]);
    assert.deepEqual(await ids(['--since', '2999-01-01']), []);
    assert.deepEqual(await ids(['--since', '2000-01-01', '--source', 'dlq-cli-b']), [letterB.id]);
    assert.deepEqual(await ids(['--status', 'retried', '--source', 'dlq-cli-a']), []);
    assert.deepEqual(await ids(['--status', 'all', '--source', 'dlq-cli-b']), [letterB.id]);

    const out = lines(ok(await runCli(['dlq', 'list', '--source', 'dlq-cli-a'], env)));
    assert.equal(out.length, 3, out.join('\n'));
    assert.deepEqual(cells(out[0]!), [
      'ID',
      'JOB',
      'SOURCE',
      'DATE',
      'ERROR TYPE',
      'CODE',
      'ATTEMPTS',
      'STATUS',
      'LAST FAILED',
    ]);
    assert.deepEqual(cells(out[2]!), [
      letterA.id,
      'fetch-records',
      'dlq-cli-a',
      DATE_A,
      'InvalidInput',
      'HTTP_422',
      '1',
      'open',
      letterA.lastFailedAt.toISOString(),
    ]);
    assert.equal(out[1]!.indexOf('PermissionDenied'), out[0]!.indexOf('ERROR TYPE'), 'columns line up');
    assert.equal(ok(await runCli(['dlq', 'list', '--source', 'dlq-nobody'], env)), 'no dead letters\n');
    assert.deepEqual(
      json<unknown[]>(await runCli(['dlq', 'list', '--source', 'dlq-nobody', '--json'], env)),
      [],
    );
  });

  it('list: a bad --since, --status or --limit is one line, exit 1', async () => {
    assertOneLineError(
      await runCli(['dlq', 'list', '--since', 'yesterday'], env),
      /invalid --since 'yesterday': expected YYYY-MM-DD, an ISO time .* or a duration like 2h or 3d/,
    );
    assertOneLineError(await runCli(['dlq', 'list', '--since', '2026-02-30'], env), /invalid --since/);
    assertOneLineError(
      await runCli(['dlq', 'list', '--status', 'stuck'], env),
      /invalid --status 'stuck': expected one of open, retried, discarded, superseded, all/,
    );
    assertOneLineError(await runCli(['dlq', 'list', '--limit', '0'], env), /expected an integer 1\.\.1000/);
  });

  it('show: the fields, the redacted failure, the timeline of the failed run, the Web UI link; --json', async () => {
    const stdout = ok(await runCli(['dlq', 'show', letterA.id], env));
    const fields = fieldsOf(stdout);
    const run = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: letterA.fetchRunId } });
    const expected: Record<string, string> = {
      id: letterA.id,
      status: 'open',
      source: 'dlq-cli-a',
      date: DATE_A,
      'business key': `fetch-records:dlq-cli-a:${DATE_A}`,
      'job type': 'fetch-records',
      'error type': 'InvalidInput',
      'error code': 'HTTP_422',
      error: 'partner dlq-cli-a records: rejected with status 422: "injected status 422"',
      attempts: '1',
      'first failed': letterA.firstFailedAt.toISOString(),
      'last failed': letterA.lastFailedAt.toISOString(),
      run: run.id,
      'run status': 'dead_lettered',
      'pages stored': '0',
      workflow: workflowIdOf('dlq-cli-a', DATE_A),
      'workflow run': runA,
      closed: '',
      'closed by': '',
      'web ui': `${UI}/namespaces/default/workflows/${encodeURIComponent(workflowIdOf('dlq-cli-a', DATE_A))}/${runA}/history`,
    };
    for (const [k, v] of Object.entries(expected)) assert.equal(fields.get(k), v, `field ${k}`);

    const [, timeline, audit] = stdout.split('\n\n');
    const timelineLines = timeline!.split('\n').filter(Boolean);
    assert.equal(timelineLines[0], 'timeline:');
    assert.deepEqual(cells(timelineLines[1]!), [
      'ACTIVITY',
      'ATTEMPT',
      'SCHEDULED',
      'STARTED',
      'ENDED',
      'OUTCOME',
      'FAILURE',
    ]);
    const rows = timelineLines.slice(2).map(cells);
    assert.equal(rows[0]![0], 'claimRun');
    assert.equal(rows[0]![5], 'completed');
    const fetchRow = rows.find((r) => r[0] === 'fetchPage');
    assert.ok(fetchRow, timeline);
    assert.deepEqual(
      [fetchRow[1], fetchRow[5], fetchRow[6]],
      [
        '1',
        'failed',
        'InvalidInput: partner dlq-cli-a records: rejected with status 422: "injected status 422"',
      ],
    );
    assert.ok(
      rows.some((r) => r[0] === 'finishRun' && r[5] === 'completed'),
      timeline,
    );
    assert.equal(audit, 'audit trail: none\n');

    const shown = json<ShowJson>(await runCli(['dlq', 'show', letterA.id, '--json'], env));
    assert.equal(shown.id, letterA.id);
    assert.equal(shown.businessKey, `fetch-records:dlq-cli-a:${DATE_A}`);
    assert.equal(
      shown.errorMessage,
      'partner dlq-cli-a records: rejected with status 422: "injected status 422"',
    );
    assert.deepEqual([shown.run.id, shown.run.status], [run.id, 'dead_lettered']);
    assert.equal(shown.workflowRunId, runA);
    assert.equal(shown.timelineRunId, runA);
    assert.equal(shown.timelineNote, undefined);
    assert.equal(shown.webUi, expected['web ui']);
    assert.deepEqual(shown.audit, []);
    const fetchPage = shown.timeline?.find((t) => t.activity === 'fetchPage');
    assert.deepEqual(
      { ...fetchPage, scheduledAt: undefined, startedAt: undefined, endedAt: undefined },
      {
        activity: 'fetchPage',
        activityId: fetchPage?.activityId,
        attempt: 1,
        scheduledAt: undefined,
        startedAt: undefined,
        endedAt: undefined,
        outcome: 'failed',
        failure: {
          type: 'InvalidInput',
          message: 'partner dlq-cli-a records: rejected with status 422: "injected status 422"',
        },
      },
    );
    assert.ok(
      fetchPage &&
        fetchPage.scheduledAt <= fetchPage.startedAt! &&
        fetchPage.startedAt! <= fetchPage.endedAt!,
    );
    // No payload (activity input or result) is ever shown: not even the run's lease token.
    const run2 = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: letterA.fetchRunId } });
    const text = JSON.stringify(shown);
    assert.ok(!text.includes('"input"') && !text.includes('"result"') && !text.includes('leaseToken'), text);
    if (run2.leaseToken) assert.ok(!text.includes(run2.leaseToken), 'no lease token shown');
  });

  it('show: Temporal unreachable still shows the letter, and says why there is no timeline', async () => {
    const result = await runCli(['dlq', 'show', letterA.id], { ...env, TEMPORAL_ADDRESS: '127.0.0.1:1' });
    const stdout = ok(result);
    assert.equal(fieldsOf(stdout).get('error type'), 'InvalidInput');
    assert.match(
      stdout,
      /^timeline: unavailable \(Temporal is unreachable: cannot reach Temporal at 127\.0\.0\.1:1/m,
    );
    const shown = json<ShowJson>(
      await runCli(['dlq', 'show', letterA.id, '--json'], { ...env, TEMPORAL_ADDRESS: '127.0.0.1:1' }),
    );
    assert.equal(shown.timeline, undefined);
    assert.match(shown.timelineNote ?? '', /Temporal is unreachable/);
  });

  it('show: a malformed or unknown id is one line, exit 1', async () => {
    assertOneLineError(
      await runCli(['dlq', 'show', 'nope'], env),
      /'nope' is not a dead letter id \(a UUID\)/,
    );
    const unknown = randomUUID();
    assertOneLineError(
      await runCli(['dlq', 'show', unknown], env),
      new RegExp(`no dead letter '${unknown}'`),
    );
  });

  it('discard: open → discarded with who and why, audited; a reason is required; only open letters', async () => {
    assertOneLineError(
      await runCli(['dlq', 'discard', letterB.id, '--by', 'carol'], env),
      /a reason is required: --reason <text>/,
    );
    assertOneLineError(
      await runCli(['dlq', 'discard', letterB.id, '--reason', '   ', '--by', 'carol'], env),
      /the reason \(--reason\) must be 1\.\.1000 characters/,
    );
    assert.deepEqual(await letterOf(letterB.id), letterB);
    assert.equal((await auditOf(letterB.id)).length, 0);

    const reason = 'the partner retired this feed (ticket OPS-7)';
    const out = ok(await runCli(['dlq', 'discard', letterB.id, '--reason', reason, '--by', 'carol'], env));
    assert.equal(
      out,
      `discarded dead letter ${letterB.id} (fetch-records:dlq-cli-b:${DATE_A}) by carol: ${reason}\n`,
    );
    const discarded = await letterOf(letterB.id);
    assert.equal(discarded.status, 'discarded');
    assert.equal(discarded.closedBy, 'carol');
    assert.equal(discarded.closeReason, reason);
    assert.ok(discarded.closedAt, 'closedAt set');
    const audit = await auditOf(letterB.id);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.reason, a.details]),
      [['carol', 'dead_letter.discard', reason, { from: 'open', runStatus: 'dead_lettered' }]],
    );
    // The run itself is left as it is, and nothing was started.
    assert.equal(
      (await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: letterB.fetchRunId } })).status,
      'dead_lettered',
    );

    assertOneLineError(
      await runCli(['dlq', 'discard', letterB.id, '--reason', 'again', '--by', 'dave'], env),
      new RegExp(`dead letter ${letterB.id} is discarded: only open letters can be discarded`),
    );
    assertOneLineError(
      await runCli(['dlq', 'retry', letterB.id, '--by', 'dave'], env),
      new RegExp(`dead letter ${letterB.id} is discarded: only open letters can be retried`),
    );
    assert.deepEqual(await letterOf(letterB.id), discarded);
    assert.equal((await auditOf(letterB.id)).length, 1);

    const shown = ok(await runCli(['dlq', 'show', letterB.id], env));
    assert.equal(fieldsOf(shown).get('status'), 'discarded');
    assert.match(shown, /^\S+Z {2,}carol {2,}dead_letter\.discard {2,}the partner retired this feed/m);
    const listed = json<LetterJson[]>(
      await runCli(['dlq', 'list', '--status', 'discarded', '--source', 'dlq-cli-b', '--json'], env),
    );
    assert.deepEqual(
      listed.map((l) => l.id),
      [letterB.id],
    );
    assert.deepEqual(
      json<unknown[]>(await runCli(['dlq', 'list', '--source', 'dlq-cli-b', '--json'], env)),
      [],
    );

    const json1 = json<{ id: string; status: string; closedBy: string }>(
      await runCli(['dlq', 'discard', letterC.id, '--reason', 'credentials revoked for good', '--json'], env),
    );
    assert.deepEqual([json1.id, json1.status], [letterC.id, 'discarded']);
    assert.ok(json1.closedBy.length > 0, 'the OS user acts without --by');
  });

  it('retry and discard are refused while the run is active or a replay holds the letter', async () => {
    await db.prisma.fetchRun.update({ where: { id: letterA.fetchRunId }, data: { status: 'running' } });
    try {
      assertOneLineError(
        await runCli(['dlq', 'retry', letterA.id, '--by', 'dave'], env),
        new RegExp(
          `run ${letterA.fetchRunId} of fetch-records:dlq-cli-a:${DATE_A} is running: it is being fetched already`,
        ),
      );
    } finally {
      await db.prisma.fetchRun.update({
        where: { id: letterA.fetchRunId },
        data: { status: 'dead_lettered' },
      });
    }
    // A replay that is running (here: waiting for a worker that never comes) holds its letters.
    const replayId = `r-test-${randomUUID()}`;
    const holder = await client.workflow.start('replayDeadLettersWorkflow', {
      workflowId: `replay/${replayId}`,
      taskQueue: `no-worker-${randomUUID()}`,
      args: [{ replayId, filter: {}, ratePerSecond: 1, max: 1, actor: 'test' }],
    });
    await db.prisma.deadLetter.update({ where: { id: letterA.id }, data: { replayId } });
    try {
      assertOneLineError(
        await runCli(['dlq', 'retry', letterA.id, '--by', 'dave'], env),
        new RegExp(`dead letter ${letterA.id} is reserved by replay ${replayId}`),
      );
      assertOneLineError(
        await runCli(['dlq', 'discard', letterA.id, '--reason', 'x', '--by', 'dave'], env),
        new RegExp(`dead letter ${letterA.id} is reserved by replay ${replayId}`),
      );
    } finally {
      await holder.terminate('test over');
      await db.prisma.deadLetter.update({ where: { id: letterA.id }, data: { replayId: null } });
    }
    assertOneLineError(await runCli(['dlq', 'retry', randomUUID()], env), /no dead letter '/);
    assertOneLineError(await runCli(['dlq', 'retry', 'abc'], env), /'abc' is not a dead letter id/);
    assert.equal((await letterOf(letterA.id)).status, 'open');
    assert.equal((await auditOf(letterA.id)).length, 0);
  });
});

describe('dlq cli: retry', { timeout: 300_000 }, () => {
  it('retry end to end: the run resumes from its stored pages, fetches and writes nothing twice, and succeeds', async () => {
    const sourceId = 'dlq-cli-retry';
    const date = '2026-10-03';
    // Stored pages of 100 records, partner pages of 50: partner requests at records 1, 51, 101, …
    // The third stored page starts at record 201; the partner refuses it for good. One page per
    // execution: the run continues as new twice, and fails in its third execution.
    const third = encodeCursor(201);
    const firstExecution = await worker.run(() => failRun(sourceId, date, 422, { cursor: third }, 1));
    const [letter] = await lettersOfSource(sourceId);
    assert.ok(letter, 'a dead letter');
    const failedRun = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: letter.fetchRunId } });
    assert.deepEqual(
      [failedRun.status, failedRun.pagesStored, failedRun.recordsStored, failedRun.attempt],
      ['dead_lettered', 2, 200, 1],
    );
    assert.deepEqual(
      [letter.errorType, letter.errorCode, letter.status],
      ['InvalidInput', 'HTTP_422', 'open'],
    );
    // The letter names the execution that held the run when it failed (the third, after two
    // continue-as-new), and `show` reads and links that one's history.
    assert.notEqual(letter.workflowRunId, firstExecution);
    const failedShown = json<ShowJson>(await runCli(['dlq', 'show', letter.id, '--json'], env));
    assert.equal(failedShown.timelineRunId, letter.workflowRunId);
    assert.deepEqual(
      failedShown.timeline?.map((t) => [t.activity, t.outcome, t.failure?.type]),
      [
        ['fetchPage', 'failed', 'InvalidInput'],
        ['finishRun', 'completed', undefined],
      ],
      'the third execution: its page refused, then the run recorded as failed',
    );
    assert.equal(
      failedShown.webUi,
      `${UI}/namespaces/default/workflows/${encodeURIComponent(workflowIdOf(sourceId, date))}/${failedShown.timelineRunId}/history`,
    );
    const failedText = ok(await runCli(['dlq', 'show', letter.id], env));
    // The timeline is the letter's own execution's: no other execution to name.
    assert.ok(failedText.includes('\ntimeline:\n'), failedText);

    // Bad overrides are refused in one line and change nothing.
    assertOneLineError(
      await runCli(['dlq', 'retry', letter.id, '--override', 'limit=5'], env),
      /unknown override 'limit': allowed keys are pageSize, pagesPerExecution/,
    );
    assertOneLineError(
      await runCli(['dlq', 'retry', letter.id, '--override', 'pageSize=0'], env),
      /invalid override pageSize=0: expected an integer 1\.\.1000/,
    );
    assertOneLineError(
      await runCli(['dlq', 'retry', letter.id, '--override', 'pageSize'], env),
      /invalid override 'pageSize': expected key=value with key one of pageSize, pagesPerExecution/,
    );
    assert.deepEqual(await letterOf(letter.id), letter);

    // Fixed at the partner: retry.
    partner.faults.clear();
    const workflowId = workflowIdOf(sourceId, date);
    const result = await worker.run(async () => {
      const out = ok(
        await runCli(
          ['dlq', 'retry', letter.id, '--override', 'pageSize=100', '--by', 'ops', '--reason', 'fixed'],
          env,
        ),
      );
      const m = new RegExp(
        `^retried dead letter ${letter.id}: started ${workflowId.replaceAll('/', '\\/')} \\(run (\\S+)\\) ` +
          `on task queue ${worker.taskQueue} with pageSize=100\\n` +
          `${UI}/namespaces/default/workflows/\\S+/history\\n$`,
      ).exec(out);
      assert.ok(m, out);
      assert.notEqual(m[1], letter.workflowRunId, 'a new execution');
      return client.workflow.getHandle(workflowId, m[1]).result() as Promise<FetchRecordsResult>;
    });
    assert.deepEqual(result, {
      status: 'succeeded',
      fetchRunId: letter.fetchRunId,
      pages: 3,
      records: RECORDS,
    });

    // The first two stored pages were fetched once over the whole test; the third twice (422, 200).
    const requested = (cursor: string | null) => partner.ledger.entries({ sourceId, date, cursor });
    for (const seq of [1, 51, 101, 151]) {
      const cursor = seq === 1 ? null : encodeCursor(seq);
      assert.deepEqual(
        requested(cursor).map((e) => e.status),
        [200],
        `records from ${seq}: fetched once`,
      );
    }
    assert.deepEqual(
      requested(third).map((e) => e.status),
      [422, 200],
    );
    assert.deepEqual(
      requested(encodeCursor(251)).map((e) => e.status),
      [200],
    );
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), RECORDS);
    const events = await db.prisma.outboxEvent.findMany({ where: { aggregateId: letter.fetchRunId } });
    const pages = events
      .filter((e) => e.topic === 'fetch.page_stored')
      .map((e) => (e.payload as { pageNo: number }).pageNo)
      .sort((a, b) => a - b);
    assert.deepEqual(pages, [0, 1, 2], 'one page event per page: none written twice');
    assert.equal(events.filter((e) => e.topic === 'fetch.run_completed').length, 1);

    const run = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: letter.fetchRunId } });
    assert.deepEqual(
      [run.status, run.pagesStored, run.recordsStored, run.attempt],
      ['succeeded', 3, RECORDS, 2],
    );
    assert.equal((await lettersOfSource(sourceId)).length, 1, 'no new dead letter');

    const retried = await letterOf(letter.id);
    assert.deepEqual([retried.status, retried.closedBy, retried.closeReason], ['retried', 'ops', 'fixed']);
    assert.ok(retried.closedAt, 'closedAt set');
    const audit = await auditOf(letter.id);
    assert.equal(audit.length, 1);
    assert.deepEqual(
      [audit[0]!.actor, audit[0]!.action, audit[0]!.reason],
      ['ops', 'dead_letter.retry', 'fixed'],
    );
    assert.deepEqual(audit[0]!.details, {
      from: 'open',
      overrides: { pageSize: 100 },
      workflowId,
      workflowRunId: run.workflowRunId,
      taskQueue: worker.taskQueue,
      joined: false,
    });

    // A second retry of the same letter is refused, and changes nothing.
    assertOneLineError(
      await runCli(['dlq', 'retry', letter.id, '--by', 'ops'], env),
      new RegExp(`dead letter ${letter.id} is retried: only open letters can be retried`),
    );
    assert.deepEqual(await letterOf(letter.id), retried);
    assert.equal((await auditOf(letter.id)).length, 1);

    const shown = ok(await runCli(['dlq', 'show', letter.id], env));
    const fields = fieldsOf(shown);
    assert.deepEqual(
      [fields.get('status'), fields.get('closed by'), fields.get('close reason'), fields.get('run status')],
      ['retried', 'ops', 'fixed', 'succeeded'],
    );
    assert.match(shown, /^\S+Z {2,}ops {2,}dead_letter\.retry {2,}fixed$/m);
    // The timeline is still the failed execution's.
    const shownJson = json<ShowJson>(await runCli(['dlq', 'show', letter.id, '--json'], env));
    assert.equal(shownJson.timelineRunId, failedShown.timelineRunId);
  });

  it('retry of a letter whose key succeeded meanwhile joins it: nothing is started, the letter is closed and says so', async () => {
    const sourceId = 'dlq-cli-joined';
    const date = '2026-10-04';
    await createSource(db.prisma, sourceId, partner.url);
    const done = await worker.run(async () => {
      const started = await startFetch(ctx, { sourceId, date, requestedBy: 'test' });
      return { runId: started.runId, result: await started.handle.result() };
    });
    assert.equal(done.result.status, 'succeeded');
    const requests = partner.ledger.count({ sourceId });
    // A letter left open while the key was run again by other means (e.g. `durable-fetch run`).
    const letter = await db.prisma.deadLetter.create({
      data: {
        fetchRunId: done.result.fetchRunId,
        jobType: 'fetch-records',
        sourceId,
        businessDate: new Date(`${date}T00:00:00Z`),
        workflowId: workflowIdOf(sourceId, date),
        workflowRunId: randomUUID(),
        errorType: 'UpstreamUnavailable',
        errorCode: 'HTTP_503',
        errorMessage: `partner ${sourceId} records: upstream unavailable (503)`,
        attempts: 1,
        firstFailedAt: new Date(Date.now() - 60_000),
        lastFailedAt: new Date(Date.now() - 60_000),
      },
    });
    const out = json<{
      joined: boolean;
      joinedStatus: string;
      runId: string;
      deadLetter: { status: string };
    }>(await runCli(['dlq', 'retry', letter.id, '--by', 'ops', '--reason', 'rerun by hand', '--json'], env));
    assert.deepEqual(
      [out.joined, out.joinedStatus, out.runId, out.deadLetter.status],
      [true, 'COMPLETED', done.runId, 'retried'],
    );
    assert.equal(partner.ledger.count({ sourceId }), requests, 'nothing fetched again');
    const audit = await auditOf(letter.id);
    assert.deepEqual(
      audit.map((a) => [a.action, (a.details as { joined: boolean }).joined]),
      [['dead_letter.retry', true]],
    );
    // The letter's workflow run does not exist: the timeline says so, the rest is shown.
    const shown = json<ShowJson>(await runCli(['dlq', 'show', letter.id, '--json'], env));
    assert.equal(shown.timeline, undefined);
    assert.match(shown.timelineNote ?? '', /no longer in Temporal|could not read/);
  });

  it('retry prints that it joined in text too', async () => {
    const sourceId = 'dlq-cli-joined';
    const date = '2026-10-04';
    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
    const letter = await db.prisma.deadLetter.create({
      data: {
        fetchRunId: run.id,
        jobType: 'fetch-records',
        sourceId,
        businessDate: new Date(`${date}T00:00:00Z`),
        workflowId: workflowIdOf(sourceId, date),
        errorType: 'Timeout',
        errorMessage: 'activity timeout',
        attempts: 1,
        firstFailedAt: new Date(),
        lastFailedAt: new Date(),
      },
    });
    const out = ok(await runCli(['dlq', 'retry', letter.id, '--by', 'ops'], env));
    assert.match(
      out,
      new RegExp(
        `^retried dead letter ${letter.id}: fetch-records:${sourceId}:${date} was already completed, nothing new was started; ` +
          `joined ${workflowIdOf(sourceId, date).replaceAll('/', '\\/')} \\(run ${run.workflowRunId}\\)\\n`,
      ),
    );
  });
});

describe('dlq cli: two job types side by side', () => {
  const DATE = '2026-10-20';
  let records: DeadLetter;
  let rates: DeadLetter;

  before(async () => {
    await createSource(db.prisma, 'dlq-job-fr', partner.url);
    await createSource(db.prisma, 'dlq-job-xr', partner.url, { jobType: 'exchange-rates' });
    records = (
      await insertDeadLetter(db.prisma, { jobType: 'fetch-records', sourceId: 'dlq-job-fr', date: DATE })
    ).letter;
    rates = (
      await insertDeadLetter(db.prisma, { jobType: 'exchange-rates', sourceId: 'dlq-job-xr', date: DATE })
    ).letter;
  });

  it('list --job keeps one job type (also with --source); the JOB column and jobType say which', async () => {
    const ofRates = json<(LetterJson & { jobType: string })[]>(
      await runCli(['dlq', 'list', '--job', 'exchange-rates', '--json'], env),
    );
    assert.deepEqual(
      ofRates.map((l) => [l.id, l.jobType, l.businessKey]),
      [[rates.id, 'exchange-rates', `exchange-rates:dlq-job-xr:${DATE}`]],
    );
    const ofRecords = json<(LetterJson & { jobType: string })[]>(
      await runCli(['dlq', 'list', '--job', 'fetch-records', '--json'], env),
    );
    assert.ok(ofRecords.some((l) => l.id === records.id));
    assert.ok(
      ofRecords.every((l) => l.jobType === 'fetch-records'),
      JSON.stringify(ofRecords),
    );
    const out = lines(ok(await runCli(['dlq', 'list', '--job', 'exchange-rates'], env)));
    assert.equal(out.length, 2, out.join('\n'));
    assert.deepEqual(cells(out[1]!).slice(0, 4), [rates.id, 'exchange-rates', 'dlq-job-xr', DATE]);
    assert.equal(
      ok(await runCli(['dlq', 'list', '--job', 'exchange-rates', '--source', 'dlq-job-fr'], env)),
      'no dead letters\n',
    );
    assertOneLineError(await runCli(['dlq', 'list', '--job', 'Rates!'], env), /expected a job type/);
  });

  it("show names the job type; replay --job --dry-run takes only that job's letters", async () => {
    assert.equal(
      fieldsOf(ok(await runCli(['dlq', 'show', rates.id], env))).get('job type'),
      'exchange-rates',
    );
    const dry = json<{ count: number; targets: { deadLetterId: string; jobType: string }[] }>(
      await runCli(['dlq', 'replay', '--job', 'exchange-rates', '--rate', '5', '--dry-run', '--json'], env),
    );
    assert.deepEqual(
      dry.targets.map((t) => [t.deadLetterId, t.jobType]),
      [[rates.id, 'exchange-rates']],
    );
    const table = lines(
      ok(await runCli(['dlq', 'replay', '--job', 'exchange-rates', '--rate', '5', '--dry-run'], env)),
    );
    assert.deepEqual(cells(table[1]!), ['DEAD LETTER', 'JOB', 'SOURCE', 'DATE']);
    assert.deepEqual(cells(table[2]!), [rates.id, 'exchange-rates', 'dlq-job-xr', DATE]);
    const ofSource = json<{ targets: { deadLetterId: string }[] }>(
      await runCli(['dlq', 'replay', '--source', 'dlq-job-fr', '--rate', '5', '--dry-run', '--json'], env),
    );
    assert.deepEqual(
      ofSource.targets.map((t) => t.deadLetterId),
      [records.id],
    );
  });
});
