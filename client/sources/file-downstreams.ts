/**
 * The `downstreams` list of a sources file (R8): each downstream's settings checked by the rules
 * of db/downstreams.ts, every problem one line with its path (`downstreams[1].breaker.failureRate:
 * must be at most 1 …`). Pure.
 */
import {
  DEFAULT_DOWNSTREAM,
  type DownstreamSettings,
  downstreamSettingsSchema,
} from '../../db/downstreams.ts';
import { SOURCE_ID_RE } from '../../workflows/business-key.ts';
import type { DesiredSource } from './file.ts';

/** The downstreams of a file, or the problems (paths relative to the file). */
export function readDownstreams(list: unknown): { downstreams: DownstreamSettings[]; problems: string[] } {
  if (!Array.isArray(list))
    return { downstreams: [], problems: ['downstreams: expected a list of downstreams'] };
  const downstreams: DownstreamSettings[] = [];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const [i, entry] of list.entries()) {
    const at = `downstreams[${i}]`;
    const parsed = downstreamSettingsSchema.safeParse(entry);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
        problems.push(`${at}${path}: ${issue.message}`);
      }
      continue;
    }
    const settings = parsed.data;
    const first = seen.get(settings.id);
    if (first !== undefined) problems.push(`${at}.id: duplicate id '${settings.id}' (also ${first})`);
    else seen.set(settings.id, at);
    for (const source of Object.keys(settings.sourceWeights)) {
      if (!SOURCE_ID_RE.test(source))
        problems.push(`${at}.sourceWeights.${source}: not a source id (1..63 of a-z, 0-9, '-' and '_')`);
    }
    downstreams.push(settings);
  }
  return { downstreams, problems };
}

/**
 * Sources that name a downstream the file's `downstreams` does not list (a likely typo: it would
 * run on the defaults, on the shared queue). `default` needs no entry.
 */
export function unlistedDownstreams(
  sources: readonly DesiredSource[],
  downstreams: readonly DownstreamSettings[],
): string[] {
  const listed = new Set(downstreams.map((d) => d.id));
  return sources
    .filter((s) => {
      const name = s.input.downstream ?? DEFAULT_DOWNSTREAM;
      return name !== DEFAULT_DOWNSTREAM && !listed.has(name);
    })
    .map(
      (s) =>
        `${s.at}.downstream: '${s.input.downstream}' is not in the file's downstreams ` +
        '(list it there, or leave `downstreams` out to keep the table as it is)',
    );
}
