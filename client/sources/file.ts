/**
 * Reading a sources file (`sources apply -f`, `sources validate -f`): YAML or JSON (YAML 1.2 reads
 * both), every problem on its own line — `<file>: <path>: <message>`, or `<file>:<line>:<col>:
 * <message>` for a syntax error — and each source checked by the rules `sources add` applies
 * (check.ts), so that a file and the CLI can never disagree on what is valid.
 */
import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument } from 'yaml';
import { errorMessage, UserFacingError } from '../../runtime/errors.ts';
import { type CheckContext, type CheckedSource, checkNewSource, type NewSource } from './check.ts';
import { oneLine } from './common.ts';
import {
  DEFAULT_DOWNSTREAM,
  type DownstreamSettings,
  downstreamSettingsSchema,
} from '../../db/ledger/downstreams.ts';
import { SOURCE_ID_RE } from '../../contract/business-key.ts';
import { pathNaming } from './fields.ts';
import { DEFAULT_JOB, FILE_KEYS, SOURCE_KEYS } from './file-schema.ts';

/** One source of a valid file. */
export interface DesiredSource {
  /** Where it is in the file, e.g. `sources[2]`. */
  at: string;
  input: NewSource;
  /** The keys the file gives it (besides `id`), in the schema's order. */
  keys: string[];
  checked: CheckedSource;
}

/**
 * A valid sources file: its name (as given, for messages), its sources in file order, and its
 * downstreams when it lists them (none: the `downstream` table is left as it is).
 */
export interface SourcesFile {
  file: string;
  sources: DesiredSource[];
  downstreams?: DownstreamSettings[];
}

export type ReadFile = { ok: true; file: SourcesFile } | { ok: false; problems: string[] };

const isMapping = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The file's value, or its syntax problems (with line and column). */
function parseText(text: string, file: string): { value: unknown } | { problems: string[] } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const issues = [...doc.errors, ...doc.warnings];
  if (issues.length > 0) {
    return {
      problems: issues.map((e) => {
        const { line, col } = lines.linePos(e.pos[0]);
        return `${file}:${line}:${col}: ${oneLine(e.message)}`;
      }),
    };
  }
  try {
    // An alias to nothing, or aliases that expand beyond reason, only fail here.
    return { value: doc.toJS({ maxAliasCount: 100 }) };
  } catch (err) {
    return { problems: [`${file}: ${oneLine(errorMessage(err))}`] };
  }
}

/** One entry of `sources`: its problems, or the source it describes. */
function readSource(
  ctx: CheckContext,
  entry: unknown,
  at: string,
): { problems: string[]; source?: DesiredSource } {
  if (!isMapping(entry))
    return { problems: [`${at}: expected a mapping of id, baseUrl and the other settings`] };
  const problems = Object.keys(entry)
    .filter((key) => !SOURCE_KEYS.includes(key))
    .map((key) => `${at}.${key}: unknown key (expected: ${SOURCE_KEYS.join(', ')})`);
  const { id, job } = entry;
  if (id === undefined) problems.push(`${at}.id: required`);
  else if (typeof id !== 'string') problems.push(`${at}.id: expected a string`);
  if (job !== undefined && typeof job !== 'string') problems.push(`${at}.job: expected a job type`);
  const keys = SOURCE_KEYS.filter((key) => key !== 'id' && entry[key] !== undefined);
  const given = Object.fromEntries(keys.map((key) => [key, entry[key]]));
  const { job: _job, ...settings } = given;
  // Unchecked values, as a command line's are: checkNewSource judges each (types included).
  const jobType = typeof job === 'string' ? job : DEFAULT_JOB;
  const input = { ...settings, id: typeof id === 'string' ? id : '', jobType } as NewSource;
  const checked = checkNewSource(ctx, input, pathNaming(at));
  // A missing id, or an id or job that is not even a string, is reported above, once (and a
  // config cannot be judged without its job).
  const skip = [
    ...(typeof id === 'string' ? [] : [`${at}.id:`]),
    ...(job === undefined || typeof job === 'string' ? [] : [`${at}.job:`, `${at}.config`]),
  ];
  problems.push(...checked.problems.filter((p) => !skip.some((prefix) => p.startsWith(prefix))));
  return problems.length > 0 ? { problems } : { problems, source: { at, input, keys, checked } };
}

/**
 * Reads the sources file text `text` (named `file` in messages): its sources, each checked as
 * `sources add` checks one (`ctx`: the jobs and the future-date policy), or every problem of the
 * file, one line each, with its path (duplicate ids and unknown keys included). Pure.
 */
export function parseSourcesFile(text: string, file: string, ctx: CheckContext): ReadFile {
  const parsed = parseText(text, file);
  if ('problems' in parsed) return { ok: false, problems: parsed.problems };
  const { value } = parsed;
  const fail = (problems: string[]): ReadFile => ({
    ok: false,
    problems: problems.map((p) => `${file}: ${p}`),
  });
  if (!isMapping(value)) return fail(['expected a mapping with a "sources" list']);
  const problems = Object.keys(value)
    .filter((key) => !FILE_KEYS.includes(key))
    .map((key) => `${key}: unknown key (expected: ${FILE_KEYS.join(', ')})`);
  if (value.$schema !== undefined && typeof value.$schema !== 'string')
    problems.push('$schema: expected a string');
  const list = value.sources;
  if (list === undefined) problems.push('sources: required (a list of sources)');
  else if (!Array.isArray(list)) problems.push('sources: expected a list of sources');
  const sources: DesiredSource[] = [];
  const seen = new Map<string, string>();
  for (const [i, entry] of (Array.isArray(list) ? list : []).entries()) {
    const at = `sources[${i}]`;
    const read = readSource(ctx, entry, at);
    problems.push(...read.problems);
    const id = isMapping(entry) ? entry.id : undefined;
    if (typeof id !== 'string') continue;
    const first = seen.get(id);
    if (first !== undefined) problems.push(`${at}.id: duplicate id '${id}' (also ${first})`);
    else seen.set(id, at);
    if (read.source) sources.push(read.source);
  }
  if (value.downstreams === undefined) {
    return problems.length > 0 ? fail(problems) : { ok: true, file: { file, sources } };
  }
  const { downstreams, problems: more } = readDownstreams(value.downstreams);
  problems.push(...more, ...unlistedDownstreams(sources, downstreams));
  return problems.length > 0 ? fail(problems) : { ok: true, file: { file, sources, downstreams } };
}

/** Reads and checks the sources file at `path` (see {@link parseSourcesFile}); an unreadable file is a problem. */
export async function readSourcesFile(path: string, ctx: CheckContext): Promise<ReadFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return {
      ok: false,
      problems: [`${path}: cannot read the file${typeof code === 'string' ? ` (${code})` : ''}`],
    };
  }
  return parseSourcesFile(text, path, ctx);
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * The error of a file with problems: a first line saying how many (and `outcome`, e.g. that
 * nothing was changed), then the problems, one per line.
 */
export function fileProblemsError(file: string, problems: readonly string[], outcome = ''): UserFacingError {
  const head = `${file}: ${plural(problems.length, 'problem', 'problems')}${outcome ? `, ${outcome}` : ''}:`;
  return new UserFacingError([head, ...problems].join('\n'), 'INVALID_INPUT');
}

// The `downstreams` list of a sources file (R8): each downstream's settings checked by the rules
// of db/ledger/downstreams.ts, every problem one line with its path (`downstreams[1].breaker.failureRate:
// must be at most 1 …`).

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
