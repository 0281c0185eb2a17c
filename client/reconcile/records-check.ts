/** A succeeded run's records against the partner's. */
import type { PartnerReader } from './partner-reader.ts';
import type { Snapshot } from './snapshot.ts';
import type { RunReport } from './findings.ts';
import { plural, quote, sample } from './findings.ts';

/** A succeeded run's records against every record the partner has for (source, date). */
export async function checkRecords(
  partner: PartnerReader,
  snap: Snapshot,
  stored: Set<string>,
  report: RunReport,
): Promise<void> {
  const ids = await partner.read(
    `partner ${snap.source.id} records of ${report.businessDate}`,
    () => partner.recordIds(report.businessDate),
    report,
  );
  if (!ids) return;
  const theirs = new Set(ids);
  report.partnerRecords = theirs.size;
  const missing = [...theirs].filter((id) => !stored.has(id));
  const extra = [...stored].filter((id) => !theirs.has(id));
  if (missing.length > 0) {
    report.mismatches.push({
      code: 'MISSING_AT_OURS',
      message: `the partner has ${plural(missing.length, 'record')} the run did not store: ${quote(missing)}`,
      expected: theirs.size,
      actual: stored.size,
      ids: sample(missing),
    });
  }
  if (extra.length > 0) {
    report.mismatches.push({
      code: 'EXTRA_AT_OURS',
      message: `the run stored ${plural(extra.length, 'record')} the partner does not have: ${quote(extra)}`,
      expected: theirs.size,
      actual: stored.size,
      ids: sample(extra),
    });
  }
}
