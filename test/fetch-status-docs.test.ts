// FetchStatus, the search attribute operators filter runs on in the Web UI (issue 37): every value
// the workflows write is listed in docs/runs.md, exactly those, and a run's values are its row's
// own words (`fetch_run.status`) but for the ones the row has no word for.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { RunStatus } from '../prisma/generated/enums.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { FETCH_STATUSES } from '../workflows/outcome.ts';

/** The first column of the table under docs/runs.md's "In the Web UI": the documented values. */
async function documented(): Promise<string[]> {
  const text = await readFile(path.join(PROJECT_ROOT, 'docs/runs.md'), 'utf8');
  const section = text.split(/^## /m).find((s) => s.startsWith('In the Web UI'));
  assert.ok(section, 'docs/runs.md has a section "In the Web UI"');
  return [...section.matchAll(/^\| `([a-z_]+)`\s+\|/gm)].map((m) => m[1] as string);
}

test('fetch-status: docs/runs.md lists every FetchStatus value the workflows write, and only those', async () => {
  assert.deepEqual(await documented(), [...FETCH_STATUSES]);
});

test("fetch-status: the values are the run row's words, but for paused, awaiting_reauthorization, duplicate and the compensation's", () => {
  const rowWords = new Set<string>(Object.values(RunStatus));
  const notRowWords = FETCH_STATUSES.filter((s) => !rowWords.has(s));
  assert.deepEqual(notRowWords, [
    'paused',
    'awaiting_reauthorization',
    'duplicate',
    'compensating',
    'needs_manual',
  ]);
  // The one that differed: a run that failed for good is `dead_lettered`, as its row.
  assert.ok((FETCH_STATUSES as readonly string[]).includes('dead_lettered'));
  assert.ok(!(FETCH_STATUSES as readonly string[]).includes('failed'));
});
