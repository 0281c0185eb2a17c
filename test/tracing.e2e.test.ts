// OpenTelemetry traces end to end (R10), on real processes: a `durable-fetch run --wait` started
// from the CLI, a `durable-fetch worker` and a `durable-fetch publisher`, each exporting OTLP/HTTP
// to a real receiver in this test, against the demo partner's catalog (an API key in the query
// string, page 2 refused once with a 503). The run is one connected trace: the CLI's start, the
// workflow, each step and attempt, every partner call (the refused one too), the store
// transactions, and the publisher's deliveries; the partner's `/events` got a `traceparent` whose
// parent is the publisher's call in that trace, and the run's completion, routed to NATS
// JetStream, one whose parent is its delivery; log lines carry the trace's ids; and the planted
// API key is in no span, attribute or export. A run started by a transactional start command
// continues the trace of the application's transaction that enqueued it.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { trace } from '@opentelemetry/api';
import { enqueueFetch } from '../client/enqueue-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { startTracing } from '../runtime/tracing-env.ts';
import { runCli, detail } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { catalogConfig } from './helpers/http-sources.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.ts';
import { waitFor } from './helpers/outbox.ts';
import { type Spawned, spawnTs, spawnWorker } from './helpers/process.ts';
import { temporalAddress } from './helpers/temporal.ts';

/** Distinctive, so that a leak anywhere is found by a plain search. */
const API_KEY = `trace-key-PLANTED-${randomBytes(8).toString('hex')}`;
const SECRET_REF = 'DF_SECRET_TRACE_CATALOG';
const RECORDS = 60; // three pages of 25
const DATE = '2026-11-20';
const SOURCE = 'traced-catalog';

let db: TestDatabase;
let partner: PartnerServer;
let receiver: OtlpReceiver;
let worker: Spawned;
let publisher: Spawned;
const taskQueue = `test-tracing-${randomUUID()}`;
/** The run's completion goes to JetStream, its page events to the partner's webhook. */
const NATS_STREAM = `DF_TEST_TRACING_${randomUUID().slice(0, 8)}`;
const NATS_PREFIX = `dftest.${NATS_STREAM.toLowerCase()}`;
const COMPLETED = 'fetch.run_completed';
let nats: NatsConnection;
let jsm: JetStreamManager;

/** What every process of the test shares: the database, Temporal, and where traces go. */
const env = () => ({
  DATABASE_URL: db.url,
  TEMPORAL_ADDRESS: temporalAddress(),
  DURABLE_FETCH_TASK_QUEUE: taskQueue,
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  // Exported within a fifth of a second instead of the default five.
  OTEL_BSP_SCHEDULE_DELAY: '200',
});

before(async () => {
  [db, partner, receiver] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, catalogRecordCount: () => RECORDS, catalogToken: API_KEY }),
    startOtlpReceiver(),
  ]);
  await createSource(db.prisma, SOURCE, partner.url, {
    jobType: 'http',
    credentialsRef: SECRET_REF,
    pageSize: 25,
    retryPolicy: 'partnerHttpQuick',
    config: catalogConfig('page-number'),
  });
  worker = spawnWorker({ ...env(), [SECRET_REF]: API_KEY, LOG_LEVEL: 'info' });
  publisher = spawnTs(['bin/durable-fetch.js', 'publisher'], {
    ...env(),
    DURABLE_FETCH_WEBHOOK_URL: `${partner.url}/events`,
    DURABLE_FETCH_OUTBOX_ROUTES: `temporal.start_workflow=temporal,${COMPLETED}=nats,*=webhook`,
    DURABLE_FETCH_NATS_URL: 'nats://127.0.0.1:4222',
    DURABLE_FETCH_NATS_STREAM: NATS_STREAM,
    DURABLE_FETCH_NATS_SUBJECT_PREFIX: NATS_PREFIX,
    LOG_LEVEL: 'info',
  });
  nats = await connect({ servers: '127.0.0.1:4222' });
  jsm = await jetstreamManager(nats);
  await Promise.all([
    worker.waitFor(/worker polling task queue/, 120_000),
    publisher.waitFor(/publisher running/, 120_000),
  ]);
});
after(async () => {
  await Promise.all([worker?.stop('SIGTERM', 30_000), publisher?.stop('SIGTERM', 30_000)]);
  await jsm?.streams.delete(NATS_STREAM).catch(() => false);
  await nats?.close();
  await partner?.close();
  await receiver?.close();
  await db?.drop();
});

const inTrace = (traceId: string) => receiver.spans().filter((s) => s.traceId === traceId);
const byId = (spans: ReceivedSpan[]) => new Map(spans.map((s) => [s.spanId, s]));

/** The spans from `span` up to the trace's root (`span` first). */
function ancestry(span: ReceivedSpan, spans: Map<string, ReceivedSpan>): ReceivedSpan[] {
  const chain = [span];
  for (let at = spans.get(span.parentSpanId); at; at = spans.get(at.parentSpanId)) chain.push(at);
  return chain;
}

describe('traces', () => {
  it('tracing: a run is one connected trace from the CLI through the workflow, partner calls and store to its webhook and NATS deliveries', async () => {
    // Page 2 is refused once: the retried attempt is in the trace too.
    partner.faults.add({
      route: 'catalog',
      style: 'page-number',
      date: DATE,
      position: '2',
      kind: 'status',
      status: 503,
    });
    const started = await runCli(['run', SOURCE, '--date', DATE, '--wait', '--json'], env(), 120_000);
    assert.equal(started.code, 0, detail(started));
    const { result } = JSON.parse(started.stdout) as { result: { status: string; records: number } };
    assert.equal(result.status, 'succeeded', started.stdout);
    // Judged by the partner and the database, not by what the run says.
    assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId: SOURCE } }), RECORDS);
    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: SOURCE } });
    const events = await db.prisma.outboxEvent.findMany({ where: { aggregateId: run.id } });
    assert.ok(events.length >= 4, 'three page events and the run completed event');

    // Every page event of the run delivered to the partner's webhook, its completion to JetStream.
    const pageEvents = events.filter((e) => e.topic !== COMPLETED);
    const deliveries = () =>
      partner.ledger.entries({ path: '/events' }).filter((e) => e.aggregateId === run.id);
    await waitFor(() => deliveries().length >= pageEvents.length, 'the page events delivered', 60_000);
    await waitFor(
      async () =>
        (await db.prisma.outboxEvent.count({ where: { aggregateId: run.id, status: 'published' } })) ===
        events.length,
      'every event of the run published',
      60_000,
    );
    const completion = await jsm.streams.getMessage(NATS_STREAM, {
      last_by_subj: `${NATS_PREFIX}.${COMPLETED}`,
    });
    const natsParent = completion?.header?.get('traceparent');

    const root = receiver
      .spans()
      .find((s) => s.name.startsWith('StartWorkflow:') && s.service === 'durable-fetch-cli');
    assert.ok(root, 'the CLI exported the span of its start');
    assert.equal(root.parentSpanId, '', "the CLI's start is the trace's root");
    const traceId = root.traceId;

    // The whole trace has arrived once every delivery's `traceparent` names a span received.
    const parentOf = (traceparent: string | undefined) => traceparent?.split('-');
    await waitFor(
      () => {
        const ids = byId(inTrace(traceId));
        const parents = [...deliveries().map((d) => d.traceparent), natsParent];
        return parents.every((p) => ids.has(parentOf(p)?.[2] ?? ''));
      },
      'the spans of every delivery',
      30_000,
    );
    // …and once no span of the trace points to a parent not yet received (the workflow's own span
    // is exported when the run ends).
    await waitFor(
      () => {
        const spans = inTrace(traceId);
        const ids = byId(spans);
        return spans.every((s) => s === root || ids.has(s.parentSpanId));
      },
      'every span of the trace and its parent',
      30_000,
    );
    const spans = inTrace(traceId);
    const ids = byId(spans);
    const services = new Set(spans.map((s) => s.service));
    for (const service of ['durable-fetch-cli', 'durable-fetch-worker', 'durable-fetch-publisher']) {
      assert.ok(
        services.has(service),
        `${service} has spans in the run's trace: ${[...services].join(', ')}`,
      );
    }
    const names = spans.map((s) => s.name);
    assert.ok(names.includes('RunWorkflow:fetchRunWorkflow'), names.join(', '));
    const roots = spans.filter((s) => s.parentSpanId === '');
    assert.deepEqual(roots, [root], 'one root: the trace is connected');

    // Every partner call, the refused one included, as a standard HTTP client span of an
    // activity attempt.
    const calls = spans.filter(
      (s) => s.name === 'GET' && String(s.attributes['url.full']).includes('/catalog/'),
    );
    const statuses = calls.map((s) => s.attributes['http.response.status_code']).sort();
    assert.deepEqual(statuses, [200, 200, 200, 503], 'three pages and the refused attempt');
    for (const call of calls) {
      assert.equal(call.attributes['http.request.method'], 'GET');
      assert.equal(call.attributes['server.address'], '127.0.0.1');
      assert.match(String(call.attributes['url.full']), /[?&]api_key=REDACTED(&|$)/);
      const chain = ancestry(call, ids).map((s) => s.name);
      assert.ok(
        chain.some((n) => n.startsWith('RunActivity:')),
        `a partner call is made by an activity attempt: ${chain.join(' < ')}`,
      );
    }
    const refused = calls.find((s) => s.attributes['http.response.status_code'] === 503);
    assert.equal(refused?.attributes['error.type'], '503');

    // The store transactions, and the deliveries as children of what stored their events.
    const stores = spans.filter((s) => s.name === 'store page');
    assert.equal(stores.length, 3, 'one store transaction per page');
    assert.ok(stores.every((s) => s.attributes['db.system.name'] === 'postgresql'));
    const sends = spans.filter((s) => s.name.startsWith('send ') && s.service === 'durable-fetch-publisher');
    assert.equal(sends.length, events.length, 'a delivery span per event of the run');
    for (const send of sends) {
      const writer = ids.get(send.parentSpanId);
      assert.ok(
        writer && ['store page', 'complete run'].includes(writer.name),
        `a delivery's parent is the transaction that wrote its event, not ${writer?.name}`,
      );
    }

    // The consumer's `traceparent`: the publisher's call, in the run's trace.
    for (const delivery of deliveries()) {
      const [version, trace, parent] = parentOf(delivery.traceparent) ?? [];
      assert.equal(version, '00');
      assert.equal(trace, traceId, 'the webhook consumer joins the run’s trace');
      const call = ids.get(parent ?? '');
      assert.equal(call?.name, 'POST');
      assert.equal(call?.service, 'durable-fetch-publisher');
      assert.ok(
        sends.some((s) => s.spanId === call?.parentSpanId),
        'the call is made by a delivery span',
      );
    }

    // The JetStream consumer's `traceparent`: the delivery itself (no call span in between).
    const [, natsTrace, natsSpan] = parentOf(natsParent) ?? [];
    assert.equal(natsTrace, traceId, 'the NATS consumer joins the run’s trace');
    assert.equal(ids.get(natsSpan ?? '')?.name, `send ${COMPLETED}`);

    // Log lines about the run carry its trace's ids.
    const logged = worker
      .output()
      .split('\n')
      .filter((line) => line.includes(`"trace_id":"${traceId}"`));
    assert.ok(logged.length > 0, `the worker logged lines with the run's trace_id:\n${worker.output()}`);

    // The planted API key is in no export at all, nor in a log line.
    for (const body of receiver.bodies()) assert.ok(!body.includes(API_KEY), 'no span holds the API key');
    assert.ok(!worker.output().includes(API_KEY) && !publisher.output().includes(API_KEY));
  });

  it('tracing: a run started by a transactional start command continues the trace of the transaction that enqueued it', async () => {
    // This test process plays the application: it traces, and enqueues inside a span of its own.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    const app = await startTracing('app-under-test');
    assert.ok(app, 'the test process traces');
    const date = '2026-11-21';
    const { workflowId, appTrace } = await trace
      .getTracer('app')
      .startActiveSpan('app: order placed', async (span) => {
        try {
          const enqueued = await db.prisma.$transaction((tx) =>
            enqueueFetch(tx, { sourceId: SOURCE, date, requestedBy: 'test' }, { taskQueue }),
          );
          return { workflowId: enqueued.workflowId, appTrace: span.spanContext().traceId };
        } finally {
          span.end();
        }
      });
    await app.shutdown();
    await waitFor(
      async () => (await db.prisma.fetchRun.findFirst({ where: { workflowId } }))?.status === 'succeeded',
      'the enqueued run to succeed',
      120_000,
    );
    await waitFor(
      () => inTrace(appTrace).some((s) => s.name === 'RunWorkflow:fetchRunWorkflow'),
      "the run's workflow span in the application's trace",
      30_000,
    );
    const spans = inTrace(appTrace);
    const ids = byId(spans);
    const run = spans.find(
      (s) => s.name === 'RunWorkflow:fetchRunWorkflow' && s.attributes.temporalWorkflowId === workflowId,
    );
    assert.ok(run, `the run's span is in the application's trace: ${spans.map((s) => s.name).join(', ')}`);
    assert.deepEqual(
      ancestry(run, ids).map((s) => `${s.service} ${s.name}`),
      [
        'durable-fetch-worker RunWorkflow:fetchRunWorkflow',
        'durable-fetch-publisher StartWorkflow:fetchRunWorkflow',
        'durable-fetch-publisher send temporal.start_workflow',
        'durable-fetch-app-under-test app: order placed',
      ],
      'application transaction → the delivery of its start command → the start → the run',
    );
  });
});
