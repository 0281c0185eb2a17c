// `durable-fetch compensations list|show|resolve|retry` as operators run them: the real CLI
// as a child process against a cloned database seeded with ledger rows, the shared Temporal dev
// server, the demo partner and a test worker. The CLI is pointed at the worker's task queue
// (DURABLE_FETCH_TASK_QUEUE); the seeded runs' workflows do not exist in Temporal, so a retry falls
// back to that queue. Assertions are on exit codes, output and the state left behind (ledger rows,
// audit entries, runs, the partner's submissions and ledger).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import type { DownstreamAction, Prisma } from '../prisma/generated/client.ts';
import { compensationWorkflowIdFor } from '../contract/business-key.ts';
import type { compensateRunWorkflow } from '../workflows/compensate-run.ts';
import type { CompensateRunResult } from '../contract/types.ts';
import {
  assertOneLineError,
  assertUsageError,
  cells,
  detail,
  fieldsOf,
  json,
  lines,
  ok,
  runCli,
} from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { temporalAddress, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const UI = 'http://ui.example.test:8080';
const MINUTE = 60_000;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
/** The CLI's environment: the test database, Temporal, the worker's task queue, a Web UI base. */
let env: Record<string, string>;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0 });
  client = await testClient();
  worker = await testWorker(testDeps(db.prisma));
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

const day = (date: string) => new Date(`${date}T00:00:00Z`);
const businessKeyOf = (sourceId: string, date: string) => `fetch-records:${sourceId}:${date}`;
const keyOf = (sourceId: string, date: string, round = 1) =>
  `${businessKeyOf(sourceId, date)}:submit-summary:r${round}`;
const compensationIdOf = (sourceId: string, businessDate: string, round = 1) =>
  compensationWorkflowIdFor({ jobType: 'fetch-records', sourceId, businessDate }, round);

/**
 * A FetchRun of `sourceId`/`date` as a failed run leaves it (dead_lettered), its source created if
 * missing (pointing at the demo partner). Its workflow id names no workflow in Temporal.
 */
async function seedRun(
  sourceId: string,
  date: string,
  extra: Partial<Prisma.FetchRunUncheckedCreateInput> = {},
): Promise<string> {
  if (!(await db.prisma.source.findUnique({ where: { id: sourceId } })))
    await createSource(db.prisma, sourceId, partner.url);
  const run = await db.prisma.fetchRun.create({
    data: {
      jobType: 'fetch-records',
      sourceId,
      businessDate: day(date),
      payload: { sourceId, businessDate: date, requestedBy: 'test' },
      idempotencyKey: businessKeyOf(sourceId, date),
      status: 'dead_lettered',
      attempt: 1,
      scheduledAt: new Date(Date.now() - 10 * MINUTE),
      startedAt: new Date(Date.now() - 10 * MINUTE),
      finishedAt: new Date(Date.now() - 5 * MINUTE),
      errorClass: 'UpstreamUnavailable',
      errorMessage: `partner ${sourceId}: upstream unavailable (503)`,
      correlationId: randomUUID(),
      workflowId: `fetch/fetch-records/${sourceId}/${date}`,
      ...extra,
    },
  });
  return run.id;
}

/** A ledger row of the run's summary submission (step 1) of claim `round`. */
async function seedAction(
  fetchRunId: string,
  sourceId: string,
  date: string,
  extra: Partial<Prisma.DownstreamActionUncheckedCreateInput> = {},
): Promise<DownstreamAction> {
  const round = extra.round ?? 1;
  const key = keyOf(sourceId, date, round);
  return db.prisma.downstreamAction.create({
    data: {
      fetchRunId,
      businessKey: businessKeyOf(sourceId, date),
      key,
      reference: key,
      round,
      action: 'submit-summary',
      step: 1,
      attempts: 1,
      ...extra,
    },
  });
}

const rowOf = (id: string) => db.prisma.downstreamAction.findUniqueOrThrow({ where: { id } });
const runOf = (id: string) => db.prisma.fetchRun.findUniqueOrThrow({ where: { id } });
const auditOf = (id: string) =>
  db.prisma.auditEntry.findMany({
    where: { targetType: 'downstream_action', targetId: id },
    orderBy: { id: 'asc' },
  });

async function assertNoWorkflow(workflowId: string): Promise<void> {
  await assert.rejects(client.workflow.getHandle(workflowId).describe(), WorkflowNotFoundError);
}

interface CompensationJson {
  id: string;
  sourceId: string;
  businessDate: string;
  state: string;
  partnerId: string | null;
  updatedAt: string;
}

describe('compensations cli: help', { concurrency: true }, () => {
  // An invalid DATABASE_URL would fail config validation: help must not get that far.
  const noConfig = { DATABASE_URL: 'mysql://nope' };

  it('compensations --help lists its commands; each command has a description and --help', async () => {
    const top = await runCli(['--help'], noConfig);
    assert.equal(top.code, 0, detail(top));
    assert.match(top.stdout, /^\s+compensations\b.*compensation ledger/m);

    const group = await runCli(['compensations', '--help'], noConfig);
    assert.equal(group.code, 0, detail(group));
    assert.match(group.stdout, /^Usage: durable-fetch compensations \[options\] \[command\]/);
    for (const command of ['list', 'show', 'resolve', 'retry']) {
      assert.match(group.stdout, new RegExp(`^\\s+${command} \\[options\\].*\\S`, 'm'));
      const help = await runCli(['compensations', command, '--help'], noConfig);
      assert.equal(help.code, 0, detail(help));
      assert.match(help.stdout, new RegExp(`^Usage: durable-fetch compensations ${command} \\[options\\]`));
      assert.match(help.stdout, /--json/);
    }
    const resolve = await runCli(['compensations', 'resolve', '--help'], noConfig);
    assert.match(resolve.stdout, /--note <text>/);
    assert.match(resolve.stdout, /--by <who>/);
  });
});

describe('compensations cli: list and show', () => {
  const now = Date.now();
  let runA1: string;
  let a1: DownstreamAction;
  let a2: DownstreamAction;
  let a3: DownstreamAction;
  let b1: DownstreamAction;

  before(async () => {
    runA1 = await seedRun('ccli-list-a', '2026-05-01');
    a1 = await seedAction(runA1, 'ccli-list-a', '2026-05-01', {
      state: 'needs_manual',
      partnerId: 'sub_901',
      partnerState: 'confirmed',
      compensationAttempts: 5,
      lookups: 2,
      lastErrorType: 'UpstreamUnavailable',
      lastError: 'partner ccli-list-a void: upstream unavailable (503)',
      confirmedAt: new Date(now - 20 * MINUTE),
      updatedAt: new Date(now - 3 * MINUTE),
    });
    a2 = await seedAction(await seedRun('ccli-list-a', '2026-05-02'), 'ccli-list-a', '2026-05-02', {
      state: 'compensated',
      partnerId: 'sub_902',
      partnerState: 'voided',
      compensationAttempts: 1,
      compensatedAt: new Date(now - MINUTE),
      updatedAt: new Date(now - MINUTE),
    });
    a3 = await seedAction(await seedRun('ccli-list-a', '2026-05-03'), 'ccli-list-a', '2026-05-03', {
      state: 'not_applied',
      updatedAt: new Date(now - 2 * MINUTE),
    });
    b1 = await seedAction(await seedRun('ccli-list-b', '2026-05-01'), 'ccli-list-b', '2026-05-01', {
      state: 'needs_manual',
      updatedAt: new Date(now),
    });
    await db.prisma.auditEntry.createMany({
      data: [
        {
          at: new Date(now - 10 * MINUTE),
          actor: 'carol',
          action: 'compensation.retry',
          targetType: 'downstream_action',
          targetId: a1.id,
          reason: 'partner says the 503s are over',
        },
        {
          at: new Date(now - 4 * MINUTE),
          actor: 'dave',
          action: 'compensation.retry',
          targetType: 'downstream_action',
          targetId: a1.id,
          reason: 'second try',
        },
        // Another row's entry, and one about a run: neither is a1's audit trail.
        {
          actor: 'erin',
          action: 'compensation.resolve',
          targetType: 'downstream_action',
          targetId: a2.id,
          reason: 'not mine',
        },
        { actor: 'erin', action: 'run.note', targetType: 'fetch_run', targetId: a1.id, reason: 'other type' },
      ],
    });
  });

  it('list --json: newest change first, filtered by source, state and limit', async () => {
    const bySource = json<CompensationJson[]>(
      await runCli(['compensations', 'list', '--source', 'ccli-list-a', '--json'], env),
    );
    assert.deepEqual(
      bySource.map((c) => [c.id, c.sourceId, c.businessDate, c.state, c.partnerId]),
      [
        [a2.id, 'ccli-list-a', '2026-05-02', 'compensated', 'sub_902'],
        [a3.id, 'ccli-list-a', '2026-05-03', 'not_applied', null],
        [a1.id, 'ccli-list-a', '2026-05-01', 'needs_manual', 'sub_901'],
      ],
    );
    assert.equal(bySource[2]!.updatedAt, new Date(now - 3 * MINUTE).toISOString());

    const limited = json<CompensationJson[]>(
      await runCli(['compensations', 'list', '--source', 'ccli-list-a', '--limit', '2', '--json'], env),
    );
    assert.deepEqual(
      limited.map((c) => c.id),
      [a2.id, a3.id],
    );

    const manualA = json<CompensationJson[]>(
      await runCli(
        ['compensations', 'list', '--state', 'needs_manual', '--source', 'ccli-list-a', '--json'],
        env,
      ),
    );
    assert.deepEqual(
      manualA.map((c) => c.id),
      [a1.id],
    );

    const manual = json<CompensationJson[]>(
      await runCli(['compensations', 'list', '--state', 'needs_manual', '--json'], env),
    );
    const manualIds = manual.map((c) => c.id);
    assert.ok(manualIds.includes(a1.id) && manualIds.includes(b1.id), manualIds.join());
    assert.ok(!manualIds.includes(a2.id) && !manualIds.includes(a3.id), manualIds.join());
    assert.ok(
      manual.every((c) => c.state === 'needs_manual'),
      'only needs_manual rows',
    );
    assert.ok(manualIds.indexOf(b1.id) < manualIds.indexOf(a1.id), 'b1 changed last: listed first');
  });

  it('list: an aligned table, then the needs_manual count; nothing found says so', async () => {
    const out = lines(ok(await runCli(['compensations', 'list', '--source', 'ccli-list-a'], env)));
    assert.equal(out.length, 5, out.join('\n'));
    assert.deepEqual(cells(out[0]!), [
      'ID',
      'SOURCE',
      'DATE',
      'ACTION',
      'STATE',
      'PARTNER ID',
      'CALLS',
      'UNDO ATTEMPTS',
      'UPDATED',
    ]);
    assert.ok(out[1]!.startsWith(a2.id) && out[2]!.startsWith(a3.id) && out[3]!.startsWith(a1.id));
    assert.deepEqual(cells(out[3]!), [
      a1.id,
      'ccli-list-a',
      '2026-05-01',
      'submit-summary',
      'needs_manual',
      'sub_901',
      '1',
      '5',
      new Date(now - 3 * MINUTE).toISOString(),
    ]);
    // Columns line up: every row's STATE starts where the header's does.
    const stateAt = out[0]!.indexOf('STATE');
    assert.equal(out[1]!.indexOf('compensated'), stateAt);
    assert.equal(out[3]!.indexOf('needs_manual'), stateAt);
    assert.equal(out[4], 'needs_manual: 1');

    assert.equal(
      ok(await runCli(['compensations', 'list', '--source', 'ccli-nobody'], env)),
      'no compensations\n',
    );
    assert.deepEqual(
      json<unknown[]>(await runCli(['compensations', 'list', '--source', 'ccli-nobody', '--json'], env)),
      [],
    );
  });

  it('list: an unknown state or a bad limit is a usage error', async () => {
    assertUsageError(
      await runCli(['compensations', 'list', '--state', 'stuck'], env),
      /'stuck' is invalid.*expected one of attempting, unknown, confirmed, compensating, compensated, not_applied, needs_manual, resolved/,
    );
    assertUsageError(
      await runCli(['compensations', 'list', '--limit', '0'], env),
      /expected an integer 1..1000/,
    );
  });

  it('show: every field, the last error, the audit trail (oldest first) and the Web UI link', async () => {
    const stdout = ok(await runCli(['compensations', 'show', a1.id], env));
    const fields = fieldsOf(stdout);
    const expected: Record<string, string> = {
      id: a1.id,
      source: 'ccli-list-a',
      date: '2026-05-01',
      action: 'submit-summary',
      state: 'needs_manual',
      'partner id': 'sub_901',
      calls: '1',
      'undo attempts': '5',
      updated: new Date(now - 3 * MINUTE).toISOString(),
      run: runA1,
      'run status': 'dead_lettered',
      'run workflow': 'fetch/fetch-records/ccli-list-a/2026-05-01',
      'business key': 'fetch-records:ccli-list-a:2026-05-01',
      key: 'fetch-records:ccli-list-a:2026-05-01:submit-summary:r1',
      reference: 'fetch-records:ccli-list-a:2026-05-01:submit-summary:r1',
      round: '1',
      step: '1',
      'partner state': 'confirmed',
      lookups: '2',
      confirmed: new Date(now - 20 * MINUTE).toISOString(),
      compensated: '',
      resolved: '',
      'resolved by': '',
      'last error': 'UpstreamUnavailable: partner ccli-list-a void: upstream unavailable (503)',
      compensation: 'compensate/fetch-records/ccli-list-a/2026-05-01/r1',
      'web ui': `${UI}/namespaces/default/workflows/compensate%2Ffetch-records%2Fccli-list-a%2F2026-05-01%2Fr1`,
    };
    for (const [k, v] of Object.entries(expected)) assert.equal(fields.get(k), v, `field ${k}`);
    // Values start in one column.
    const valueAt = new Set(
      stdout
        .split('\n\n')[0]!
        .split('\n')
        .filter((l) => / {2,}\S/.test(l))
        .map((l) => /^(\S.*?) {2,}/.exec(l)![0].length),
    );
    assert.equal(valueAt.size, 1, stdout);

    const trail = stdout.split('\n\n')[1]!.split('\n').filter(Boolean);
    assert.equal(trail[0], 'audit trail:');
    assert.deepEqual(cells(trail[1]!), ['AT', 'ACTOR', 'ACTION', 'REASON']);
    assert.deepEqual(trail.slice(2).map(cells), [
      [
        new Date(now - 10 * MINUTE).toISOString(),
        'carol',
        'compensation.retry',
        'partner says the 503s are over',
      ],
      [new Date(now - 4 * MINUTE).toISOString(), 'dave', 'compensation.retry', 'second try'],
    ]);

    const shown = json<{
      id: string;
      state: string;
      run: { id: string; status: string; workflowId: string; businessDate: string };
      audit: { id: string; actor: string; targetId: string }[];
      compensationWorkflowId: string;
    }>(await runCli(['compensations', 'show', a1.id, '--json'], env));
    assert.equal(shown.id, a1.id);
    assert.deepEqual(shown.run, {
      id: runA1,
      jobType: 'fetch-records',
      sourceId: 'ccli-list-a',
      businessDate: '2026-05-01',
      status: 'dead_lettered',
      workflowId: 'fetch/fetch-records/ccli-list-a/2026-05-01',
    });
    assert.deepEqual(
      shown.audit.map((a) => [a.actor, a.targetId, typeof a.id]),
      [
        ['carol', a1.id, 'string'],
        ['dave', a1.id, 'string'],
      ],
    );
    assert.equal(shown.compensationWorkflowId, 'compensate/fetch-records/ccli-list-a/2026-05-01/r1');

    assert.match(ok(await runCli(['compensations', 'show', a3.id], env)), /\naudit trail: none\n$/);
  });

  it('show: a malformed or unknown id is one line, exit 1', async () => {
    assertOneLineError(
      await runCli(['compensations', 'show', 'nope'], env),
      /'nope' is not a compensation id \(a UUID\)/,
    );
    const unknown = randomUUID();
    assertOneLineError(
      await runCli(['compensations', 'show', unknown], env),
      new RegExp(`no compensation '${unknown}'`),
    );
  });
});

describe('compensations cli: resolve', () => {
  it('resolve: needs_manual → resolved with who and why, audited; the run becomes compensated', async () => {
    const runId = await seedRun('ccli-resolve', '2026-05-05');
    const row = await seedAction(runId, 'ccli-resolve', '2026-05-05', {
      state: 'needs_manual',
      partnerId: 'sub_77',
      partnerState: 'confirmed',
      compensationAttempts: 5,
      lastErrorType: 'UpstreamUnavailable',
      lastError: 'partner ccli-resolve void: upstream unavailable (503)',
      updatedAt: new Date(Date.now() - 5 * MINUTE),
    });
    const note = 'voided sub_77 by hand in the partner portal (ticket OPS-42)';
    const started = new Date();
    const out = ok(await runCli(['compensations', 'resolve', row.id, '--note', note, '--by', 'alice'], env));
    assert.equal(out, `resolved ${row.id} (was needs_manual); run ${runId} is now compensated\n`);

    const after = await rowOf(row.id);
    assert.equal(after.state, 'resolved');
    assert.equal(after.resolvedBy, 'alice');
    assert.equal(after.resolutionNote, note);
    assert.ok(after.resolvedAt && after.resolvedAt.getTime() >= started.getTime() - 5_000, 'resolvedAt set');
    assert.ok(after.updatedAt.getTime() > row.updatedAt.getTime(), 'updatedAt moved');
    // What the partner holds is not touched by a resolve.
    assert.equal(after.partnerId, 'sub_77');
    assert.equal(after.compensationAttempts, 5);
    assert.equal(partner.ledger.count({ reference: row.reference }), 0);

    const audit = await auditOf(row.id);
    assert.equal(audit.length, 1);
    assert.deepEqual(
      { ...audit[0], id: undefined, at: undefined },
      {
        id: undefined,
        at: undefined,
        actor: 'alice',
        action: 'compensation.resolve',
        targetType: 'downstream_action',
        targetId: row.id,
        reason: note,
        details: { from: 'needs_manual', partnerId: 'sub_77' },
      },
    );
    const run = await runOf(runId);
    assert.equal(run.status, 'compensated');

    const shown = ok(await runCli(['compensations', 'show', row.id], env));
    const fields = fieldsOf(shown);
    assert.equal(fields.get('state'), 'resolved');
    assert.equal(fields.get('resolved by'), 'alice');
    assert.equal(fields.get('resolution note'), note);
    assert.equal(fields.get('run status'), 'compensated');
    assert.match(shown, /^\S+Z {2,}alice {2,}compensation\.resolve {2,}voided sub_77 by hand/m);

    // Resolving it again is refused, and changes nothing.
    assertOneLineError(
      await runCli(['compensations', 'resolve', row.id, '--note', 'again', '--by', 'bob'], env),
      new RegExp(`compensation ${row.id} is resolved: only needs_manual can be resolved`),
    );
    assert.deepEqual(await rowOf(row.id), after);
    assert.equal((await auditOf(row.id)).length, 1);
    assert.equal((await runOf(runId)).updatedAt.getTime(), run.updatedAt.getTime());
  });

  it('resolve: a row that is not needs_manual is refused and left as it is', async () => {
    const runId = await seedRun('ccli-resolve', '2026-05-06');
    const row = await seedAction(runId, 'ccli-resolve', '2026-05-06', {
      state: 'compensating',
      partnerId: 'sub_78',
      compensationAttempts: 2,
    });
    assertOneLineError(
      await runCli(['compensations', 'resolve', row.id, '--note', 'I voided it', '--by', 'alice'], env),
      new RegExp(`compensation ${row.id} is compensating: only needs_manual can be resolved`),
    );
    assert.deepEqual(await rowOf(row.id), row);
    assert.equal((await auditOf(row.id)).length, 0);
    assert.equal((await runOf(runId)).status, 'dead_lettered');
    assertOneLineError(
      await runCli(['compensations', 'resolve', randomUUID(), '--note', 'x'], env),
      /no compensation '/,
    );
    assertOneLineError(
      await runCli(['compensations', 'resolve', 'sub_78', '--note', 'x'], env),
      /'sub_78' is not a compensation id/,
    );
  });

  it('resolve: the run stays failed while another action is unsettled; the note is required; default actor', async () => {
    const runId = await seedRun('ccli-resolve', '2026-05-07', { attempt: 2 });
    const r1 = await seedAction(runId, 'ccli-resolve', '2026-05-07', {
      state: 'needs_manual',
      partnerId: 'sub_80',
    });
    const r2 = await seedAction(runId, 'ccli-resolve', '2026-05-07', { state: 'needs_manual', round: 2 });

    // No --note, or an empty or too long one: refused, nothing changed.
    assertUsageError(
      await runCli(['compensations', 'resolve', r2.id, '--by', 'alice'], env),
      /required option '--note <text>' not specified/,
    );
    assertOneLineError(
      await runCli(['compensations', 'resolve', r2.id, '--note', '   '], env),
      /the note \(--note\) must be 1\.\.1000 characters/,
    );
    assertOneLineError(
      await runCli(['compensations', 'resolve', r2.id, '--note', 'x'.repeat(1001)], env),
      /the note \(--note\) must be 1\.\.1000 characters/,
    );
    assert.deepEqual(await rowOf(r2.id), r2);
    assert.equal((await auditOf(r2.id)).length, 0);

    // Without --by, the OS user acts (the CLI's environment has no USER).
    const first = json<{
      compensation: { id: string; state: string; resolvedBy: string };
      runStatus: string;
    }>(
      await runCli(['compensations', 'resolve', r1.id, '--note', 'settled with the partner', '--json'], env),
    );
    assert.deepEqual(first.compensation.state, 'resolved');
    assert.equal(first.compensation.resolvedBy, os.userInfo().username);
    assert.equal(first.runStatus, 'dead_lettered');
    assert.equal((await runOf(runId)).status, 'dead_lettered');
    assert.equal((await auditOf(r1.id))[0]?.actor, os.userInfo().username);

    const second = ok(
      await runCli(
        ['compensations', 'resolve', r2.id, '--note', 'never reached the partner', '--by', 'bob'],
        env,
      ),
    );
    assert.equal(second, `resolved ${r2.id} (was needs_manual); run ${runId} is now compensated\n`);
    assert.equal((await runOf(runId)).status, 'compensated');
  });
});

describe('compensations cli: retry', { timeout: 300_000 }, () => {
  it('retry end to end: the compensation runs again, fails into needs_manual, then voids the submission once', async () => {
    const sourceId = 'ccli-retry';
    const date = '2026-05-10';
    const runId = await seedRun(sourceId, date);
    const reference = keyOf(sourceId, date);
    const submission = partner.submissions.create(reference, { pages: 1, records: 30 });
    assert.equal(partner.submissions.get(submission.id)?.status, 'submitted');
    const row = await seedAction(runId, sourceId, date, {
      state: 'needs_manual',
      partnerId: submission.id,
      partnerState: 'submitted',
      compensationAttempts: 5,
      lastErrorType: 'UpstreamUnavailable',
      lastError: `partner ${sourceId} void: upstream unavailable (503)`,
      confirmedAt: new Date(Date.now() - 30 * MINUTE),
    });
    const workflowId = compensationIdOf(sourceId, date);
    const voids = () => partner.ledger.entries({ action: 'void', reference });

    await worker.run(async () => {
      // 1. The partner still refuses voids: the retried compensation exhausts its budget again.
      partner.faults.add({
        route: 'submissions',
        action: 'void',
        reference,
        kind: 'status',
        status: 503,
        times: 50,
      });
      const started = json<{ workflowId: string; runId: string; taskQueue: string; state: string }>(
        await runCli(
          [
            'compensations',
            'retry',
            row.id,
            '--reason',
            'partner says voids work again',
            '--by',
            'bob',
            '--json',
          ],
          env,
        ),
      );
      assert.equal(started.workflowId, workflowId);
      assert.equal(
        started.taskQueue,
        worker.taskQueue,
        "the run's workflow does not exist: the configured queue",
      );
      assert.equal(started.state, 'confirmed');
      const failed = await client.workflow
        .getHandle<typeof compensateRunWorkflow>(workflowId, started.runId)
        .result();
      assert.deepEqual(failed, {
        compensated: 0,
        notApplied: 0,
        needsManual: 1,
        runStatus: 'dead_lettered',
      } satisfies CompensateRunResult);
      const stillManual = await rowOf(row.id);
      assert.equal(stillManual.state, 'needs_manual');
      assert.equal(stillManual.compensationAttempts, 10, 'five more void attempts');
      assert.equal(stillManual.lastErrorType, 'UpstreamUnavailable');
      assert.equal(partner.submissions.get(submission.id)?.status, 'submitted');
      assert.equal(voids().length, 5);
      assert.ok(
        voids().every((e) => e.status === 503 && e.effect === false),
        JSON.stringify(voids()),
      );
      partner.faults.clear();

      // 2. Fixed: the next retry voids it, exactly once.
      const out = ok(
        await runCli(
          ['compensations', 'retry', row.id, '--reason', 'partner fixed voids', '--by', 'bob'],
          env,
        ),
      );
      const m = new RegExp(
        `^started ${workflowId.replaceAll('/', '\\/')} \\(run (\\S+)\\) on task queue ${worker.taskQueue}; ` +
          `compensation ${row.id} is confirmed until it settles\\n${UI}/namespaces/default/workflows/\\S+/history\\n$`,
      ).exec(out);
      assert.ok(m, out);
      const done = await client.workflow.getHandle<typeof compensateRunWorkflow>(workflowId, m[1]).result();
      assert.deepEqual(done, { compensated: 1, notApplied: 0, needsManual: 0, runStatus: 'compensated' });
    });

    const settled = await rowOf(row.id);
    assert.equal(settled.state, 'compensated');
    assert.equal(settled.partnerState, 'voided');
    assert.ok(settled.compensatedAt, 'compensatedAt set');
    assert.equal(settled.compensationAttempts, 11);
    assert.equal(settled.lastError, null);
    assert.equal(partner.submissions.get(submission.id)?.status, 'voided');
    assert.deepEqual(partner.submissions.live(reference), []);
    const effects = voids().filter((e) => e.effect === true);
    assert.equal(effects.length, 1, JSON.stringify(voids()));
    assert.equal(effects[0]!.submissionId, submission.id);
    assert.equal(effects[0]!.status, 200);
    assert.equal(partner.ledger.count({ action: 'submit' }), 0, 'nothing was submitted again');
    assert.equal((await runOf(runId)).status, 'compensated');

    const audit = await auditOf(row.id);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.reason, a.details]),
      [
        [
          'bob',
          'compensation.retry',
          'partner says voids work again',
          { from: 'needs_manual', to: 'confirmed', partnerId: submission.id, workflowId },
        ],
        [
          'bob',
          'compensation.retry',
          'partner fixed voids',
          { from: 'needs_manual', to: 'confirmed', partnerId: submission.id, workflowId },
        ],
      ],
    );
  });

  it('retry of a row whose partner id is unknown: it is looked up, adopted and voided', async () => {
    const sourceId = 'ccli-retry-lookup';
    const date = '2026-05-11';
    const runId = await seedRun(sourceId, date, {
      status: 'cancelled',
      errorClass: null,
      errorMessage: null,
    });
    const reference = keyOf(sourceId, date);
    // The submit's answer was lost: the partner holds a submission the ledger has no id for.
    const submission = partner.submissions.create(reference, { pages: 2, records: 150 });
    const row = await seedAction(runId, sourceId, date, {
      state: 'needs_manual',
      lastErrorType: 'OutcomeUnknown',
      lastError: 'partner ccli-retry-lookup holds 2 live submissions for one action',
    });
    const workflowId = compensationIdOf(sourceId, date);
    const done = await worker.run(async () => {
      const started = json<{ workflowId: string; runId: string; state: string }>(
        await runCli(['compensations', 'retry', row.id, '--json', '--by', 'carol'], env),
      );
      assert.equal(started.workflowId, workflowId);
      assert.equal(started.state, 'unknown');
      return client.workflow.getHandle<typeof compensateRunWorkflow>(workflowId, started.runId).result();
    });
    assert.deepEqual(done, { compensated: 1, notApplied: 0, needsManual: 0, runStatus: 'compensated' });
    const settled = await rowOf(row.id);
    assert.equal(settled.state, 'compensated');
    assert.equal(settled.partnerId, submission.id);
    assert.equal(partner.submissions.get(submission.id)?.status, 'voided');
    assert.equal(partner.ledger.entries({ action: 'void', reference }).filter((e) => e.effect).length, 1);
    assert.equal((await runOf(runId)).status, 'compensated');
    const audit = await auditOf(row.id);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.reason, a.details]),
      [
        [
          'carol',
          'compensation.retry',
          null,
          { from: 'needs_manual', to: 'unknown', partnerId: null, workflowId },
        ],
      ],
    );
  });

  it('retry is refused for a row not in needs_manual, a run still active, or a compensation already running', async () => {
    const sourceId = 'ccli-refuse';

    // Not needs_manual.
    const doneRun = await seedRun(sourceId, '2026-05-12', { status: 'compensated' });
    const done = await seedAction(doneRun, sourceId, '2026-05-12', {
      state: 'compensated',
      partnerId: 'sub_99',
      partnerState: 'voided',
    });
    assertOneLineError(
      await runCli(['compensations', 'retry', done.id, '--by', 'bob'], env),
      new RegExp(
        `compensation ${done.id} is compensated: only needs_manual \\(or an unsettled row nothing works on\\) can be retried`,
      ),
    );
    assert.deepEqual(await rowOf(done.id), done);
    assert.equal((await auditOf(done.id)).length, 0);
    await assertNoWorkflow(compensationIdOf(sourceId, '2026-05-12'));

    // The run is running again (a new claim): its own workflow may still act.
    const activeRun = await seedRun(sourceId, '2026-05-13', { status: 'running', finishedAt: null });
    const active = await seedAction(activeRun, sourceId, '2026-05-13', {
      state: 'needs_manual',
      partnerId: 'sub_98',
    });
    assertOneLineError(
      await runCli(['compensations', 'retry', active.id], env),
      new RegExp(`run ${activeRun} is running: .*retry once it ends`),
    );
    assert.deepEqual(await rowOf(active.id), active);
    assert.equal((await auditOf(active.id)).length, 0);
    await assertNoWorkflow(compensationIdOf(sourceId, '2026-05-13'));

    // A compensation of the key is running (here: started on a queue no worker polls).
    const busyRun = await seedRun(sourceId, '2026-05-14');
    const busy = await seedAction(busyRun, sourceId, '2026-05-14', {
      state: 'needs_manual',
      partnerId: 'sub_97',
    });
    const busyId = compensationIdOf(sourceId, '2026-05-14');
    const running = await client.workflow.start<typeof compensateRunWorkflow>('compensateRunWorkflow', {
      workflowId: busyId,
      taskQueue: `ccli-idle-${randomUUID()}`,
      args: [{ fetchRunId: busyRun, sourceId, businessDate: '2026-05-14', round: 1, reason: 'failed' }],
    });
    try {
      assertOneLineError(
        await runCli(['compensations', 'retry', busy.id, '--by', 'bob'], env),
        /a compensation of fetch-records:ccli-refuse:2026-05-14 is running \(compensate\/fetch-records\/ccli-refuse\/2026-05-14\/r1\); retry once it ends/,
      );
      assert.deepEqual(await rowOf(busy.id), busy);
      assert.equal((await auditOf(busy.id)).length, 0);
      assert.equal((await running.describe()).runId, running.firstExecutionRunId, 'no other run started');
    } finally {
      await running.terminate('test done');
    }

    // Bad input.
    assertOneLineError(
      await runCli(['compensations', 'retry', 'nope'], env),
      /'nope' is not a compensation id/,
    );
    assertOneLineError(
      await runCli(['compensations', 'retry', busy.id, '--by', ''], env),
      /the actor \(--by\) must be 1\.\.200 characters/,
    );
  });
});
