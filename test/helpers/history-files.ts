/**
 * Reading the recorded workflow histories (test/histories/*.json) and the texts a secret could hide
 * in. What each fixture must show is test/helpers/history-fixtures.ts.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { PROJECT_ROOT } from '../../runtime/config.ts';

export const HISTORIES_DIR = path.join(PROJECT_ROOT, 'test', 'histories');

/** One fixture file: one workflow execution. Histories carry no workflow id: it is kept beside. */
export interface HistoryFixture {
  workflowId: string;
  runId: string;
  workflowType: string;
  /** Temporal's JSON history, as `historyToJSON` writes it (and the CLI and Web UI download). */
  history: { events: HistoryEvent[] };
}

/** The parts of a proto-JSON history event the checks read. */
export interface HistoryEvent {
  eventType: string;
  [attributes: string]: unknown;
}

/** Every fixture file in `dir`, parsed, by file name (sorted). Throws on unreadable JSON. */
export async function readFixtures(dir = HISTORIES_DIR): Promise<Map<string, HistoryFixture>> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  const fixtures = new Map<string, HistoryFixture>();
  for (const file of files) {
    fixtures.set(file, JSON.parse(await readFile(path.join(dir, file), 'utf8')) as HistoryFixture);
  }
  return fixtures;
}

/**
 * Texts in `fixtureJson` a secret could hide in: the file itself and every payload's data,
 * base64-decoded (payload bytes are base64 in proto JSON, so a plain search would miss them).
 */
export function searchableTexts(fixtureJson: string): string[] {
  const texts = [fixtureJson];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== 'object' || node === null) return;
    const obj = node as Record<string, unknown>;
    if (typeof obj.data === 'string' && 'metadata' in obj)
      texts.push(Buffer.from(obj.data, 'base64').toString('utf8'));
    Object.values(obj).forEach(walk);
  };
  walk(JSON.parse(fixtureJson));
  return texts;
}
