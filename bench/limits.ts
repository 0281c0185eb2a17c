/**
 * `npm run bench`, limits (R12d "maximum payload"): each size limit of a run's input and of a
 * partner's page, driven through the real path — accepted at the limit, refused one byte (one
 * record, one character) above it, with the error the user gets. A real `durable-fetch worker`
 * process with its default limits, the run's dev server, PostgreSQL, and the demo partner (in
 * this process) serving pages of exactly the size asked for through its `oversize` and `page`
 * faults. Rows: the largest size accepted against the limit (ratio 1.0 = accepted exactly at the
 * limit); the JSON holds each refusal's error type, code and message as stored in its dead letter
 * (what `durable-fetch dlq show` prints) or thrown by the client.
 *
 *   npx tsx bench/limits.ts [--quick]        (the same checks either way: they are few and fast)
 */
import { pathToFileURL } from 'node:url';
import { type Client, WorkflowFailedError } from '@temporalio/client';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../contract/http-limits.ts';
import { MAX_RECORD_ID_LENGTH, MAX_RECORDS_PER_RESPONSE } from '../activities/job-runtime.ts';
import { type DurableFetchContext, prepareFetch, startFetch } from '../client/start-fetch.ts';
import type { FaultSpec } from '../partner/fault-spec.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { useTestDatabase, type TestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { testClient } from '../test/helpers/temporal.ts';
import { MAX_CURSOR_LENGTH, MAX_PAGE_SIZE } from '../contract/input-limits.ts';
import { DEFAULT_MAX_INPUT_BYTES } from '../contract/types.ts';
import { peakRss, rssMiB } from './proc-stats.ts';
import type { BenchOptions, BenchRow, BenchSection } from './report.ts';
import { type BenchWorker, startBenchWorker } from './service-processes.ts';
import { standalone } from './standalone.ts';

/** Records of the demo partner's page where a case does not set the page itself. */
const RECORDS = 100;

/** How a run (or a start) ended, as its user sees it. */
interface Outcome {
  ok: boolean;
  /** `succeeded (N records)`, `dead_lettered`, `refused by the client`, `refused by the server`. */
  status: string;
  errorType?: string;
  errorCode?: string;
  message?: string;
}

/** One limit: the largest size accepted and the first refused, each with its outcome. */
interface LimitCase {
  what: string;
  limit: number;
  unit: string;
  /** Where the limit is set. */
  setting: string;
  atLimit: Outcome & { size: number };
  overLimit: Outcome & { size: number };
  /** Peak RSS of the worker while it took the accepted case (the partner-page cases), and just before. */
  workerPeakRssMiB?: number;
  workerRssBeforeMiB?: number;
}

interface Stack {
  db: TestDatabase;
  partner: PartnerServer;
  client: Client;
  worker: BenchWorker;
  ctx: DurableFetchContext;
}

let dates = 0;
/** A business date no other case of this section uses. */
const nextDate = () => new Date(Date.UTC(2001, 0, 1) + dates++ * 86_400_000).toISOString().slice(0, 10);

/** Runs `sourceId` for a new date through the client and the worker; how it ended. */
async function runOnce(
  stack: Stack,
  sourceId: string,
  extra: { correlationId?: string; pageSize?: number } = {},
) {
  const date = nextDate();
  const started = await startFetch(stack.ctx, { sourceId, date, requestedBy: 'test', ...extra });
  try {
    const result = await started.handle.result();
    return {
      ok: result.status === 'succeeded',
      status: result.status === 'succeeded' ? `succeeded, ${result.records} records stored` : result.status,
    } satisfies Outcome;
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    return deadLetterOf(stack, sourceId, date);
  }
}

/** The dead letter a failed run of `(sourceId, date)` left, as `dlq show` shows it. */
async function deadLetterOf(stack: Stack, sourceId: string, date: string): Promise<Outcome> {
  const letter = await stack.db.prisma.deadLetter.findFirst({
    where: { sourceId, businessDate: new Date(`${date}T00:00:00Z`) },
  });
  if (!letter) return { ok: false, status: 'failed, no dead letter' };
  return {
    ok: false,
    status: 'dead_lettered',
    errorType: letter.errorType,
    errorCode: letter.errorCode ?? undefined,
    message: letter.errorMessage,
  };
}

/** A partner-page case: the run of a source whose first page is `fault`, at and over the limit. */
async function partnerCase(
  stack: Stack,
  name: string,
  faults: (over: boolean, sourceId: string) => FaultSpec[],
): Promise<{ at: Outcome; over: Outcome; workerPeakRssMiB: number; workerRssBeforeMiB: number }> {
  const results: Outcome[] = [];
  let workerPeakRssMiB = 0;
  const workerRssBeforeMiB = Math.round(await rssMiB(stack.worker.pid));
  for (const over of [false, true]) {
    const sourceId = `lim-${name}-${over ? 'over' : 'at'}`;
    await createSource(stack.db.prisma, sourceId, stack.partner.url, { pageSize: MAX_PAGE_SIZE });
    for (const fault of faults(over, sourceId)) stack.partner.faults.add(fault);
    const memory = peakRss([stack.worker.pid]);
    results.push(await runOnce(stack, sourceId));
    const [peak = 0] = memory.stop();
    if (!over) workerPeakRssMiB = peak;
  }
  return { at: results[0] as Outcome, over: results[1] as Outcome, workerPeakRssMiB, workerRssBeforeMiB };
}

/** `count` records of the demo partner's shape, ids `<prefix>1…`. */
const records = (count: number, prefix = 'r') =>
  Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i + 1}`, value: i }));

/** Response bytes: an `oversize` page (chunked, no Content-Length) of exactly the limit, then one byte more. */
async function responseBytes(stack: Stack): Promise<LimitCase> {
  const limit = DEFAULT_MAX_RESPONSE_BYTES;
  const r = await partnerCase(stack, 'bytes', (over, sourceId) => [
    { sourceId, cursor: null, kind: 'oversize', bytes: limit + (over ? 1 : 0), times: 1 },
  ]);
  const sent = (sourceId: string) => stack.partner.ledger.entries({ sourceId })[0]?.bodyBytes ?? 0;
  return {
    what: 'partner response body',
    limit,
    unit: 'bytes',
    setting: 'HTTP_MAX_RESPONSE_BYTES (default 16 MiB)',
    atLimit: { size: sent('lim-bytes-at'), ...r.at },
    overLimit: { size: sent('lim-bytes-over'), ...r.over },
    workerPeakRssMiB: r.workerPeakRssMiB,
    workerRssBeforeMiB: r.workerRssBeforeMiB,
  };
}

/** Records per response: a `page` of exactly MAX_RECORDS_PER_RESPONSE records, then one more. */
async function recordsPerResponse(stack: Stack): Promise<LimitCase> {
  const limit = MAX_RECORDS_PER_RESPONSE;
  const r = await partnerCase(stack, 'records', (over, sourceId) => [
    {
      sourceId,
      cursor: null,
      kind: 'page',
      page: { records: records(limit + (over ? 1 : 0)), nextCursor: null },
    },
  ]);
  return {
    what: 'records in one partner response',
    limit,
    unit: 'records',
    setting: 'MAX_RECORDS_PER_RESPONSE (activities/job-api/define.ts)',
    atLimit: { size: limit, ...r.at },
    overLimit: { size: limit + 1, ...r.over },
    workerPeakRssMiB: r.workerPeakRssMiB,
    workerRssBeforeMiB: r.workerRssBeforeMiB,
  };
}

/** Cursor length: a first page whose next cursor is MAX_CURSOR_LENGTH characters, then one more. */
async function cursorLength(stack: Stack): Promise<LimitCase> {
  const limit = MAX_CURSOR_LENGTH;
  const r = await partnerCase(stack, 'cursor', (over, sourceId) => {
    const cursor = 'c'.repeat(limit + (over ? 1 : 0));
    return [
      { sourceId, cursor: null, kind: 'page', page: { records: records(1, 'a'), nextCursor: cursor } },
      // The page after it, when the cursor was taken: the partner answers the long cursor.
      { sourceId, cursor, kind: 'page', page: { records: records(1, 'b'), nextCursor: null } },
    ];
  });
  return {
    what: 'partner next cursor',
    limit,
    unit: 'characters',
    setting: 'MAX_CURSOR_LENGTH (contract/input-limits.ts)',
    atLimit: { size: limit, ...r.at },
    overLimit: { size: limit + 1, ...r.over },
  };
}

/** Record id length: one record whose id is MAX_RECORD_ID_LENGTH characters, then one more. */
async function recordIdLength(stack: Stack): Promise<LimitCase> {
  const limit = MAX_RECORD_ID_LENGTH;
  const r = await partnerCase(stack, 'id', (over, sourceId) => [
    {
      sourceId,
      cursor: null,
      kind: 'page',
      page: { records: [{ id: 'i'.repeat(limit + (over ? 1 : 0)) }], nextCursor: null },
    },
  ]);
  return {
    what: 'record id',
    limit,
    unit: 'characters',
    setting: 'MAX_RECORD_ID_LENGTH (activities/job-runtime.ts); the demo job checks it first',
    atLimit: { size: limit, ...r.at },
    overLimit: { size: limit + 1, ...r.over },
  };
}

/** A client-side refusal as the user meets it. */
async function refusedByClient(start: () => Promise<unknown>): Promise<Outcome> {
  try {
    await start();
    return { ok: true, status: 'accepted' };
  } catch (err) {
    if (!(err instanceof UserFacingError)) throw err;
    return { ok: false, status: 'refused by the client', errorCode: err.code, message: err.message };
  }
}

/**
 * The workflow input, client side: the largest input the field rules allow (the longest source id,
 * correlation id, page size and requester) is far below the default byte limit, so that limit is
 * shown at a setting the largest input meets exactly: accepted (and run to its end) at it, refused
 * one byte below it. Then the field rule that binds at the default: the correlation id's length.
 */
async function inputCases(stack: Stack): Promise<LimitCase[]> {
  const sourceId = `lim-input-${'x'.repeat(63 - 'lim-input-'.length)}`;
  await createSource(stack.db.prisma, sourceId, stack.partner.url);
  const widest = { sourceId, correlationId: 'c'.repeat(128), pageSize: MAX_PAGE_SIZE };
  const requestedBy = 'app-client' as const;
  const prepared = await prepareFetch(stack.ctx, { ...widest, date: nextDate(), requestedBy });
  const largest = Buffer.byteLength(JSON.stringify(prepared.input));
  const at = await runOnce({ ...stack, ctx: { ...stack.ctx, maxInputBytes: largest } }, sourceId, widest);
  const over = await refusedByClient(() =>
    startFetch({ ...stack.ctx, maxInputBytes: largest - 1 }, { ...widest, date: nextDate(), requestedBy }),
  );
  const corrAt = await runOnce(stack, sourceId, { correlationId: 'k'.repeat(128) });
  const corrOver = await refusedByClient(() =>
    startFetch(stack.ctx, { sourceId, date: nextDate(), correlationId: 'k'.repeat(129) }),
  );
  return [
    {
      what: `workflow input, at a limit set to the largest input the field rules allow (default ${DEFAULT_MAX_INPUT_BYTES})`,
      limit: largest,
      unit: 'bytes',
      setting: 'DURABLE_FETCH_MAX_INPUT_BYTES (256..2,000,000, default 16384)',
      atLimit: { size: largest, ...at },
      overLimit: { size: largest, ...over, status: `${over.status} at a limit of ${largest - 1}` },
    },
    {
      what: 'correlation id',
      limit: 128,
      unit: 'characters',
      setting: 'isCorrelationId (contract/business-key.ts)',
      atLimit: { size: 128, ...corrAt },
      overLimit: { size: 129, ...corrOver },
    },
  ];
}

/**
 * A start that bypasses the client (`temporal workflow start`, the Web UI) with an input of `bytes`
 * bytes of JSON: one unknown field padding an otherwise valid input.
 */
async function bypassingStart(
  stack: Stack,
  sourceId: string,
  bytes: number,
): Promise<Outcome & { size: number }> {
  const date = nextDate();
  const base = {
    jobType: 'fetch-records',
    sourceId,
    businessDate: date,
    correlationId: 'bypass',
    requestedBy: 'test',
  };
  const empty = Buffer.byteLength(JSON.stringify({ ...base, padding: '' }));
  const input = { ...base, padding: 'p'.repeat(Math.max(0, bytes - empty)) };
  const size = Buffer.byteLength(JSON.stringify(input));
  let handle;
  try {
    handle = await stack.client.workflow.start('fetchRecordsWorkflow', {
      workflowId: `fetch/fetch-records/${sourceId}/${date}`,
      taskQueue: stack.worker.taskQueue,
      args: [input],
    });
  } catch (err) {
    return {
      size,
      ok: false,
      status: 'refused by the server at start',
      message: messageChain(err).slice(0, 500),
    };
  }
  try {
    await handle.result();
    return { size, ok: true, status: 'succeeded' };
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    return {
      size,
      ...(await deadLetterOf(stack, sourceId, date)),
      status: 'refused by the workflow, dead-lettered',
    };
  }
}

/** `err`'s message and its causes' (the client wraps the server's answer in a generic one). */
function messageChain(err: unknown): string {
  const messages: string[] = [];
  for (let e = err; e instanceof Error && messages.length < 5; e = e.cause) messages.push(e.message);
  return messages.length > 0 ? messages.join(': ') : String(err);
}

/** The row of a case: the largest size accepted against the limit. */
function rowOf(c: LimitCase): BenchRow {
  const accepted = c.atLimit.ok ? c.atLimit.size : 0;
  const refused = c.overLimit.ok ? 'ACCEPTED' : `refused (${c.overLimit.errorCode ?? c.overLimit.status})`;
  return {
    scenario: `${c.what}: largest accepted vs limit; +1 ${refused}`,
    ours: accepted,
    baseline: c.limit,
    unit: c.unit,
    ratio: Number((accepted / c.limit).toFixed(4)),
    goal: '1.0, and +1 refused',
  };
}

export async function benchLimits(opts: BenchOptions): Promise<BenchSection> {
  const { say } = opts;
  const db = await useTestDatabase();
  const partner = await startPartner({ port: 0, recordCount: () => RECORDS, maxPageSize: 500 });
  const client = await testClient();
  let worker: BenchWorker | undefined;
  try {
    worker = await startBenchWorker(db.url);
    const ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue };
    const stack: Stack = { db, partner, client, worker, ctx };
    const cases: LimitCase[] = [];
    for (const [label, measure] of [
      ['workflow input', inputCases],
      ['partner response bytes', async (s: Stack) => [await responseBytes(s)]],
      ['records per response', async (s: Stack) => [await recordsPerResponse(s)]],
      ['cursor length', async (s: Stack) => [await cursorLength(s)]],
      ['record id length', async (s: Stack) => [await recordIdLength(s)]],
    ] as const) {
      say(`limits: ${label}…`);
      for (const c of await measure(stack)) {
        cases.push(c);
        say(
          `limits: ${c.what}: ${c.atLimit.size} ${c.unit} → ${c.atLimit.status}; ${c.overLimit.size} ${c.unit} → ` +
            `${c.overLimit.status} ${c.overLimit.errorType ?? ''} ${c.overLimit.errorCode ?? ''}: ${c.overLimit.message ?? ''}`,
        );
      }
    }
    say('limits: starts that bypass the client (1 MiB and 3 MiB of input)…');
    const bypassSource = 'lim-bypass';
    await createSource(db.prisma, bypassSource, partner.url);
    const bypass = [
      await bypassingStart(stack, bypassSource, 1024 * 1024),
      await bypassingStart(stack, bypassSource, 3 * 1024 * 1024),
    ];
    for (const b of bypass)
      say(`limits: bypassing start of ${b.size} bytes → ${b.status}: ${b.message ?? ''}`);
    return {
      name: 'limits',
      rows: cases.map(rowOf),
      details: { cases, bypassingStarts: bypass, partnerRecordsPerPage: RECORDS },
    };
  } finally {
    await worker?.stop();
    await client.connection.close();
    await partner.close();
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchLimits);
