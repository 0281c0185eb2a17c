// The replay gate (R9 "on deploy"; docs/versioning.md): runs stay open across deploys,
// so new workflow code must replay every history today's code recorded (test/histories/, written
// by scripts/record-histories.ts) without a determinism error. Pure replay: no Temporal server,
// no database; the workflow code, interceptors and sinks are the real worker's.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { HistoryAndWorkflowId } from '@temporalio/client';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { replayWorkerOptions } from '../worker/worker.ts';
import {
  EXPECTED_FIXTURES,
  type HistoryFixture,
  PLANTED_SECRET,
  readFixtures,
  searchableTexts,
} from './helpers/history-fixtures.ts';
import { historyFromJson } from './helpers/history-json.ts';

let fixtures: Map<string, HistoryFixture>;

/** The error's name and Core's own line (`[TMPRL1100] Nondeterminism error: …`) when it has one. */
function briefly(error: Error): string {
  const core = /\[TMPRL\d+\][^"]*/.exec(error.message)?.[0];
  return `${error.name}: ${core ?? error.message}`;
}

before(async () => {
  // Warnings only (the replay worker is otherwise chatty); before any worker of this process.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  fixtures = await readFixtures();
});

describe('workflow replay gate', { timeout: 300_000 }, () => {
  it('the recorded histories are all there, each a closed execution showing what it was recorded for', () => {
    const missing = EXPECTED_FIXTURES.filter((f) => !fixtures.has(f.file)).map((f) => f.file);
    assert.deepEqual(missing, [], 'fixtures missing from test/histories/ (record them, never drop them)');
    for (const expected of EXPECTED_FIXTURES) {
      const fixture = fixtures.get(expected.file) as HistoryFixture;
      assert.equal(fixture.workflowType, expected.workflowType, expected.file);
      assert.ok(expected.check(fixture.history.events), `${expected.file} does not show ${expected.shows}`);
    }
    const types = new Set([...fixtures.values()].map((f) => f.workflowType));
    assert.deepEqual(
      [...types].sort(),
      [
        'compensateRunWorkflow',
        'fetchRecordsWorkflow',
        'fetchRunWorkflow',
        'replayDeadLettersWorkflow',
        'scheduledFetchWorkflow',
      ],
      'every workflow type the worker registers has a recorded history',
    );
  });

  it('no recorded history holds the planted credential, in plain text or inside a payload', () => {
    for (const [file, fixture] of fixtures) {
      const texts = searchableTexts(JSON.stringify(fixture));
      assert.ok(!texts.some((t) => t.includes(PLANTED_SECRET)), `${file} holds the planted credential`);
    }
  });

  // Both ways: a run moves between workers that trace (OpenTelemetry's workflow interceptors
  // bundled) and workers that do not, and each must replay what the other recorded.
  for (const traced of [false, true]) {
    it(`every recorded history replays against the current workflow code${traced ? ' with the tracing interceptors' : ''} without a determinism error`, async () => {
      const files = [...fixtures.keys()];
      assert.ok(files.length >= EXPECTED_FIXTURES.length, `only ${files.length} fixtures`);
      // Histories carry no workflow id; interceptors read it, so each replays under its real one.
      const histories = function* (): Generator<HistoryAndWorkflowId> {
        for (const fixture of fixtures.values()) {
          yield { workflowId: fixture.workflowId, history: historyFromJson(fixture.history) };
        }
      };
      const failures: string[] = [];
      let replayed = 0;
      for await (const result of Worker.runReplayHistories(replayWorkerOptions(traced), histories())) {
        // One history at a time, in the order given: the result's index names its fixture.
        const file = files[replayed++] ?? '?';
        if (result.error) failures.push(`${file} (${result.workflowId}): ${briefly(result.error)}`);
      }
      assert.equal(replayed, files.length, 'every history was replayed');
      assert.ok(
        failures.length === 0,
        `${failures.length} of ${files.length} recorded histories no longer replay: the change needs ` +
          `patched() (docs/versioning.md), never a re-recorded fixture:\n${failures.join('\n')}`,
      );
    });
  }
});
