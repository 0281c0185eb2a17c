/**
 * What a cell of the Web UI Reset matrix measures (R3, R4, R11): the database's rows and events of
 * the run, the partner's submissions and ledger, the run's dead letters; the safety every cell
 * asserts; the table printed at the end of a matrix file (test/helpers/reset-matrix.ts).
 */
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import type { PartnerServer } from '../../partner/server.ts';
import type { TestDatabase } from './database.ts';
import { waitFor } from './outbox.ts';
import type { Spawned } from './process.ts';

/** 120 records in pages of 50: three stored pages, one per execution with `pagesPerExecution: 1`. */
export const RECORDS = 120;
export const PAGES = 3;

/** The reset kinds of the table (see reset-matrix.ts). */
export type CellKind = 'first' | 'first=last-can' | 'last' | 'last-can';

export interface Stack {
  db: TestDatabase;
  partner: PartnerServer;
  client: Client;
  worker: Spawned;
  taskQueue: string;
  date: string;
}

export interface Measured {
  status: string;
  /** Stored business rows minus the partner's records (0: none missing, none doubled). */
  extraRows: number;
  /** Page events beyond one per page, completion events beyond one. */
  extraEvents: number;
  /** Submit calls that created a submission, and the most under one reference. */
  submits: number;
  maxPerReference: number;
  live: number;
  voided: number;
  /** `<errorType>/<errorCode>:<status>` of each dead letter of the run. */
  deadLetters: string[];
}

/**
 * Waits (up to a minute) until the run's ledger rows are settled: none in flight or being
 * compensated, none live of a run that did not succeed — what its compensation would change.
 */
export async function downstreamSettled(s: Stack, sourceId: string): Promise<void> {
  const settled = async () => {
    const run = await s.db.prisma.fetchRun.findFirstOrThrow({
      where: { sourceId },
      include: { downstreamActions: true },
    });
    if (run.status === 'running') return false;
    return run.downstreamActions.every(
      (a) =>
        !['attempting', 'unknown', 'compensating'].includes(a.state) &&
        (a.state !== 'confirmed' || run.status === 'succeeded'),
    );
  };
  await waitFor(settled, 'the ledger settled', 60_000).catch(() => undefined); // measured as it is
}

/** What the database and the partner hold for the source's run. */
export async function measure(s: Stack, sourceId: string): Promise<Measured> {
  const { prisma } = s.db;
  const run = await prisma.fetchRun.findFirstOrThrow({ where: { sourceId }, include: { deadLetters: true } });
  const rows = await prisma.fetchedRecord.count({ where: { sourceId } });
  const topics = await prisma.outboxEvent.groupBy({
    by: ['topic'],
    where: { aggregateId: run.id },
    _count: true,
  });
  const countOf = (topic: string) => topics.find((t) => t.topic === topic)?._count ?? 0;
  const mine = (reference: string | undefined) =>
    reference?.startsWith(`fetch-records:${sourceId}:`) ?? false;
  const effects = s.partner.ledger.entries({ action: 'submit' }).filter((e) => e.effect && mine(e.reference));
  const perReference = new Map<string, number>();
  for (const e of effects)
    perReference.set(e.reference ?? '', (perReference.get(e.reference ?? '') ?? 0) + 1);
  const submissions = s.partner.submissions.list().filter((x) => mine(x.reference));
  return {
    status: run.status,
    extraRows: rows - RECORDS,
    extraEvents:
      Math.max(0, countOf('fetch.page_stored') - PAGES) + Math.max(0, countOf('fetch.run_completed') - 1),
    submits: effects.length,
    maxPerReference: Math.max(0, ...perReference.values()),
    live: submissions.filter((x) => x.status !== 'voided').length,
    voided: submissions.filter((x) => x.status === 'voided').length,
    deadLetters: run.deadLetters
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
      .map((d) => `${d.errorType}/${d.errorCode ?? '-'}:${d.status}`),
  };
}

/** Asserts the safety every cell shares, and records the cell's row of the table. */
export function recordCell(
  table: Map<string, string>,
  cell: { order: number; state: string; kind: CellKind; outcome: string },
  m: Measured,
): void {
  const kindOrder = ['first', 'first=last-can', 'last', 'last-can'].indexOf(cell.kind);
  table.set(
    `${String(cell.order).padStart(2, '0')}${kindOrder} ${cell.state.padEnd(22)} ${cell.kind.padEnd(15)}`,
    [
      cell.outcome.padEnd(16),
      m.status.padEnd(14),
      String(m.extraRows).padStart(5),
      String(m.extraEvents).padStart(7),
      `${m.submits}/${m.maxPerReference}`.padStart(9),
      String(m.live).padStart(5),
      String(m.voided).padStart(7),
      `  ${m.deadLetters.join(', ') || '-'}`,
    ].join(' '),
  );
  // A run that did not succeed may have stored only some of the records, never one twice.
  if (m.status === 'succeeded') assert.equal(m.extraRows, 0, 'each partner record stored once');
  else assert.ok(m.extraRows <= 0, 'no partner record stored twice');
  assert.equal(m.extraEvents, 0, 'no duplicate outbox event');
  assert.ok(m.maxPerReference <= 1, 'at most one submission per reference');
  assert.ok(m.live <= 1, 'never two live submissions');
}

export function formatTable(title: string, table: Map<string, string>): string {
  const head =
    `${'state'.padEnd(22)} ${'reset to'.padEnd(15)} ${'workflow'.padEnd(16)} ${'row'.padEnd(14)} ` +
    `${'+rows'.padStart(5)} ${'+events'.padStart(7)} ${'submits'.padStart(9)} ${'live'.padStart(5)} ` +
    `${'voided'.padStart(7)}   dead letters`;
  const lines = [...table.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k.slice(4)} ${v}`);
  return [`\n${title}`, head, ...lines].join('\n');
}
