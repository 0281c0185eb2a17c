/**
 * `npm run bench`, job overhead: durable-fetch's run of a job against a bare Temporal workflow
 * that runs as many regular activities as no-ops (bench/bare-workflows.ts) — what the project's
 * guarantees cost next to the round trips a naive design spends. Both workers are real processes
 * with the same settings on one dev server; the phases rotate, so a warming or cooling machine
 * favours none. Pages of 100 records, two per run, with and without the downstream step. Our side
 * runs a new source's defaults (local page fetches); a third side runs the same job for a source
 * that fetches as activity tasks (`localFetch: false`): the same steps, its partner calls as
 * activity tasks on the task queue instead of local activities.
 */
import { pathToFileURL } from 'node:url';
import type { Client } from '@temporalio/client';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { testClient } from '../test/helpers/temporal.ts';
import { measurePhase, type PhaseResult, settleAll, startBare, startRun, startWorkers } from './phases.ts';
import { type BenchOptions, type BenchRow, type BenchSection, median, round } from './report.ts';
import { standalone } from './standalone.ts';

const RECORDS = 200;
const PAGE_SIZE = 100;

/** The steps one run takes: regular activities plus local ones (each a step the baseline spends). */
async function stepsOf(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter(
    (e) =>
      e.activityTaskScheduledEventAttributes ||
      e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
  ).length;
}

export async function benchOverhead(opts: BenchOptions): Promise<BenchSection> {
  const runs = opts.quick ? 60 : 200;
  const repeats = opts.quick ? 1 : 3;
  const db = await useTestDatabase();
  const partner = await startPartner({ port: 0, recordCount: () => RECORDS, maxPageSize: PAGE_SIZE });
  const client = await testClient();
  const workers = await startWorkers(db.url);
  try {
    await createSource(db.prisma, 'ovh-plain', partner.url, { pageSize: PAGE_SIZE });
    await createSource(db.prisma, 'ovh-step', partner.url, { pageSize: PAGE_SIZE, submitSummary: true });
    const tasks = { pageSize: PAGE_SIZE, localFetch: false };
    await createSource(db.prisma, 'ovh-plain-tasks', partner.url, tasks);
    await createSource(db.prisma, 'ovh-step-tasks', partner.url, { ...tasks, submitSummary: true });
    const ctx = { temporal: client, prisma: db.prisma, taskQueue: workers.oursQueue };
    const kinds = { plain: 'ovh-plain', step: 'ovh-step' } as const;
    const taskKinds = { plain: 'ovh-plain-tasks', step: 'ovh-step-tasks' } as const;
    const steps = { plain: 0, step: 0 };
    opts.say('overhead: warming up both workers…');
    for (const kind of ['plain', 'step'] as const) {
      const started = await Promise.all(
        Array.from({ length: 10 }, (_, i) => startRun(ctx, (i % 2 ? taskKinds : kinds)[kind], RECORDS)),
      );
      await settleAll(started);
      const [one] = await db.prisma.fetchRun.findMany({ where: { sourceId: kinds[kind] }, take: 1 });
      steps[kind] = await stepsOf(client, one?.workflowId ?? '');
      const bare = await Promise.all(
        Array.from({ length: 10 }, () => startBare(client, workers.bareQueue, steps[kind])),
      );
      await settleAll(bare);
    }
    const phases: Record<string, PhaseResult[]> = {};
    const add = (key: string, r: PhaseResult) => (phases[key] ??= []).push(r);
    const sides = ['ours', 'bare', 'tasks'] as const;
    for (let rep = 0; rep < repeats; rep++) {
      for (const kind of ['plain', 'step'] as const) {
        const shift = (rep + (kind === 'step' ? 1 : 0)) % sides.length;
        const order = [...sides.slice(shift), ...sides.slice(0, shift)];
        for (const who of order) {
          opts.say(
            `overhead: ${runs} runs at once, ${kind === 'step' ? 'with' : 'no'} downstream step, ${who} (${rep + 1}/${repeats})…`,
          );
          const result =
            who === 'bare'
              ? await measurePhase(workers.bare, workers.serverPid, runs, () =>
                  startBare(client, workers.bareQueue, steps[kind]),
                )
              : await measurePhase(workers.ours, workers.serverPid, runs, () =>
                  startRun(ctx, (who === 'tasks' ? taskKinds : kinds)[kind], RECORDS),
                );
          add(`${kind}-${who}`, result);
        }
      }
    }
    const rows: BenchRow[] = [];
    for (const kind of ['plain', 'step'] as const) {
      const label =
        kind === 'step'
          ? `with the downstream step (${steps.step} steps)`
          : `no downstream step (${steps.plain} steps)`;
      const of = (who: string, field: keyof PhaseResult) =>
        median((phases[`${kind}-${who}`] ?? []).map((p) => p[field]));
      const pair = (field: keyof PhaseResult, who = 'ours') => ({
        ours: of(who, field),
        baseline: of('bare', field),
      });
      const rate = pair('runsPerSecond');
      rows.push({
        scenario: `runs/s, ${label}`,
        ...rate,
        unit: 'runs/s',
        ratio: round(rate.ours / rate.baseline),
        goal: '≥ 1.0',
      });
      const worker = pair('workerCpuMsPerRun');
      rows.push({
        scenario: `worker CPU per run, ${label}`,
        ...worker,
        unit: 'ms',
        ratio: round(worker.baseline / worker.ours),
      });
      const server = pair('serverCpuMsPerRun');
      rows.push({
        scenario: `Temporal server CPU per run, ${label}`,
        ...server,
        unit: 'ms',
        ratio: round(server.baseline / server.ours),
      });
      // The rest of the machine: the work the bare workflow's no-ops do not do (PostgreSQL's
      // statements, the partner serving its pages) shares the same two cores.
      for (const [field, what] of [
        ['postgresCpuMsPerRun', 'PostgreSQL CPU per run'],
        ['benchCpuMsPerRun', 'bench process CPU per run (client, demo partner)'],
        ['machineCpuMsPerRun', 'machine CPU per run (every process)'],
      ] as const) {
        const cpu = pair(field);
        rows.push({
          scenario: `${what}, ${label}`,
          ...cpu,
          unit: 'ms',
          ratio: cpu.ours > 0 ? round(cpu.baseline / cpu.ours) : null,
        });
      }
      // The same job for a source that fetches as activity tasks, against the same bare workflow.
      const tasksRate = pair('runsPerSecond', 'tasks');
      rows.push({
        scenario: `runs/s, page fetches as activity tasks, ${label}`,
        ...tasksRate,
        unit: 'runs/s',
        ratio: round(tasksRate.ours / tasksRate.baseline),
      });
      for (const [field, what] of [
        ['workerCpuMsPerRun', 'worker CPU per run'],
        ['serverCpuMsPerRun', 'Temporal server CPU per run'],
        ['machineCpuMsPerRun', 'machine CPU per run (every process)'],
      ] as const) {
        const cpu = pair(field, 'tasks');
        rows.push({
          scenario: `${what}, page fetches as activity tasks, ${label}`,
          ...cpu,
          unit: 'ms',
          ratio: round(cpu.baseline / cpu.ours),
        });
      }
    }
    return {
      name: 'overhead',
      rows,
      details: { runsPerPhase: runs, repeats, recordsPerRun: RECORDS, pageSize: PAGE_SIZE, steps, phases },
    };
  } finally {
    await workers.stop();
    await client.connection.close();
    await partner.close();
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchOverhead);
