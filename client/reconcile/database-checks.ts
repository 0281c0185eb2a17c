/** The database against itself: a run's counters, business rows and outbox events. */
import { RUN_COMPLETED_TOPIC } from '../../activities/outbox.ts';
import { idsOf, type Snapshot } from './snapshot.ts';
import type { Finding, MismatchCode, RunReport } from './findings.ts';
import type { Prisma } from '../../prisma/generated/client.ts';
import { plural, quote, sample } from './findings.ts';

/** The database against itself. Returns the distinct externalIds the run's page events list. */
export function checkDatabase(snap: Snapshot, report: RunReport): Set<string> {
  const mismatch = (f: Finding<MismatchCode>) => report.mismatches.push(f);
  const pages = snap.events.flatMap((e) => {
    const ids = idsOf(snap.job, e);
    return ids === undefined ? [] : [ids];
  });

  const seen = new Map<string, number>();
  for (const page of pages) {
    for (const id of new Set(page)) seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  const listed = new Set(seen.keys());
  const repeated = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  if (repeated.length > 0) {
    mismatch({
      code: 'DUPLICATE_IN_EVENTS',
      message: `${plural(repeated.length, 'externalId')} in more than one page event: ${quote(repeated)}`,
      expected: 0,
      actual: repeated.length,
      ids: sample(repeated),
    });
  }
  // Without the job's reconcile hooks (or the job itself) the records cannot be read back.
  if (snap.job?.reconcile) checkRecordRows(snap, report, pages.length, listed);
  checkCompletion(snap, report);
  return listed;
}

/** The run's counters and business rows against its page events. */
function checkRecordRows(snap: Snapshot, report: RunReport, pages: number, listed: Set<string>): void {
  const { run } = snap;
  const mismatch = (f: Finding<MismatchCode>) => report.mismatches.push(f);
  if (run.pagesStored !== pages) {
    mismatch({
      code: 'PAGES_COUNT',
      message: `pages_stored is ${run.pagesStored} but the run has ${pages} page events`,
      expected: run.pagesStored,
      actual: pages,
    });
  }
  if (run.recordsStored !== listed.size) {
    mismatch({
      code: 'RECORDS_COUNT',
      message: `records_stored is ${run.recordsStored} but the run's page events list ${listed.size} distinct records`,
      expected: run.recordsStored,
      actual: listed.size,
    });
  }
  const missing = [...listed].filter((id) => !snap.existing.has(id));
  if (missing.length > 0) {
    mismatch({
      code: 'RECORD_MISSING',
      message: `page events list ${plural(missing.length, 'record')} with no business row: ${quote(missing)}`,
      expected: listed.size,
      actual: listed.size - missing.length,
      ids: sample(missing),
    });
  }
  const unlisted = snap.ownRows.filter((id) => !listed.has(id));
  if (unlisted.length > 0) {
    mismatch({
      code: 'RECORD_WITHOUT_EVENT',
      message: `${plural(unlisted.length, 'business row')} of the run in none of its page events: ${quote(unlisted)}`,
      expected: 0,
      actual: unlisted.length,
      ids: sample(unlisted),
    });
  }
}

/** The completion event and the outbox's delivery state of the run. */
function checkCompletion(snap: Snapshot, report: RunReport): void {
  const { run, events } = snap;
  const mismatch = (f: Finding<MismatchCode>) => report.mismatches.push(f);
  const completions = events.filter((e) => e.topic === RUN_COMPLETED_TOPIC);
  const completion = completions[0];
  if (run.status === 'succeeded' && !completion) {
    mismatch({
      code: 'COMPLETION_EVENT_MISSING',
      message: `run succeeded but has no ${RUN_COMPLETED_TOPIC} event`,
      expected: 1,
      actual: 0,
    });
  } else if (run.status !== 'succeeded' && completion) {
    mismatch({
      code: 'COMPLETION_EVENT_UNEXPECTED',
      message: `run is ${run.status} but has a ${RUN_COMPLETED_TOPIC} event (${completion.id})`,
      expected: 0,
      actual: completions.length,
    });
  }
  if (completion) {
    const said = {
      pages: numberIn(completion.payload, 'pages'),
      records: numberIn(completion.payload, 'records'),
    };
    if (said.pages !== run.pagesStored || said.records !== run.recordsStored) {
      mismatch({
        code: 'COMPLETION_EVENT_COUNTS',
        message: `${RUN_COMPLETED_TOPIC} event says ${said.pages} pages, ${said.records} records; the run ${run.pagesStored}, ${run.recordsStored}`,
        expected: { pages: run.pagesStored, records: run.recordsStored },
        actual: said,
      });
    }
  }
  const dead = events.filter((e) => e.status === 'dead');
  if (dead.length > 0) {
    mismatch({
      code: 'OUTBOX_DEAD',
      message: `${plural(dead.length, 'outbox event')} of the run dead (never delivered): ${quote(dead.map((e) => `${e.topic} ${e.id}`))}`,
      expected: 0,
      actual: dead.length,
      ids: dead.map((e) => e.id),
    });
  }
  const pending = events.filter((e) => e.status === 'pending').length;
  if (pending > 0) {
    report.notes.push({
      code: 'OUTBOX_PENDING',
      message: `${plural(pending, 'outbox event')} not delivered yet (the publisher sends them)`,
      actual: pending,
    });
  }
}

function numberIn(payload: Prisma.JsonValue, key: string): number | undefined {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  const v = payload[key];
  return typeof v === 'number' ? v : undefined;
}
