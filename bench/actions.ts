/**
 * `npm run bench`, Temporal actions: what one run costs on Temporal Cloud, where every start,
 * activity attempt, timer, search-attribute upsert and workflow task with local activities is a
 * billed Action (and the namespace's rate limit counts the same). Each scenario runs at the
 * default settings on the project's worker process, its histories (every execution of the run) are
 * read back, and bench/billable-actions.ts counts them by Temporal Cloud's published rules, next to
 * the naive design of the same steps: one start and one activity per step, nothing else. Counts,
 * not timings: the same on any machine.
 */
import { pathToFileURL } from 'node:url';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { testClient } from '../test/helpers/temporal.ts';
import { type ActionCount, billableActions, naiveActions, sumActions } from './billable-actions.ts';
import { startWorkers } from './phases.ts';
import type { BenchOptions, BenchRow, BenchSection } from './report.ts';
import { standalone } from './standalone.ts';

const RECORDS = 200;
const PARTNER_PAGE = 100;

/** Every execution of the run whose first execution is `workflowId`'s first run, counted. */
async function actionsOfRun(client: Client, workflowId: string): Promise<ActionCount> {
  const counts: ActionCount[] = [];
  let runId: string | undefined;
  for (let i = 0; i < 50; i++) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    counts.push(billableActions(events));
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    if (!runId) break;
  }
  return sumActions(counts);
}

interface Scenario {
  name: string;
  sourceId: string;
  create: (db: Awaited<ReturnType<typeof useTestDatabase>>, partnerUrl: string) => Promise<void>;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'demo job, 2 pages',
    sourceId: 'act-plain',
    create: (db, url) => createSource(db.prisma, 'act-plain', url, { pageSize: PARTNER_PAGE }),
  },
  {
    name: 'demo job, 2 pages and its downstream step',
    sourceId: 'act-step',
    create: (db, url) =>
      createSource(db.prisma, 'act-step', url, { pageSize: PARTNER_PAGE, submitSummary: true }),
  },
  {
    name: 'declarative http job, 3 pages',
    sourceId: 'act-http',
    create: (db, url) =>
      createSource(db.prisma, 'act-http', url, {
        jobType: 'http',
        pageSize: 70,
        config: {
          request: { path: '/sources/{sourceId}/records', query: { date: '{date}' } },
          auth: { type: 'none' },
          records: { path: 'records' },
          pagination: {
            type: 'cursor',
            path: 'nextCursor',
            param: 'cursor',
            limitParam: 'limit',
            totalPath: 'total',
          },
        },
      }),
  },
];

export async function benchActions(opts: BenchOptions): Promise<BenchSection> {
  const db = await useTestDatabase();
  const partner = await startPartner({ port: 0, recordCount: () => RECORDS, maxPageSize: PARTNER_PAGE });
  const client = await testClient();
  const workers = await startWorkers(db.url);
  const rows: BenchRow[] = [];
  const details: Record<string, unknown> = {};
  try {
    const ctx = { temporal: client, prisma: db.prisma, taskQueue: workers.oursQueue };
    for (const [i, s] of SCENARIOS.entries()) {
      await s.create(db, partner.url);
      opts.say(`actions: ${s.name}…`);
      const started = await startFetch(ctx, {
        sourceId: s.sourceId,
        date: `2026-01-${String(i + 10).padStart(2, '0')}`,
        requestedBy: 'test',
      });
      const result = await started.handle.result();
      if (result.status !== 'succeeded') throw new Error(`${s.name}: the run ended ${result.status}`);
      const ours = await actionsOfRun(client, started.workflowId);
      const naive = naiveActions(ours.steps);
      details[s.name] = { ...ours, naive, pages: result.pages };
      rows.push({
        scenario: `Temporal Cloud actions per run, ${s.name} (${ours.steps} steps)`,
        ours: ours.total,
        baseline: naive,
        unit: 'actions',
        ratio: Math.round((naive / ours.total) * 100) / 100,
        goal: '≥ 1.0',
      });
    }
  } finally {
    await workers.stop();
    await client.connection.close();
    await partner.close();
    await db.drop();
  }
  return { name: 'actions', rows, details };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchActions);
