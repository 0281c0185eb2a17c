/**
 * Placeholders of the declarative job's request templates. A template is text with `{name}` or
 * `{name:format}`; what a run knows at request time fills them in:
 * - `{date}` the business date `YYYY-MM-DD`; `{date:FORMAT}` with `yyyy`, `MM`, `dd` (e.g.
 *   `{date:yyyyMMdd}`, `{date:dd/MM/yyyy}`);
 * - `{dayStart}`, `{dayEnd}`: the business day's first instant and the next day's, in the source's
 *   timezone, as ISO timestamps (UTC); `{dayStartEpoch}`, `{dayEndEpoch}`: the same in epoch seconds;
 * - `{sourceId}`; `{cursor}`, `{page}`, `{offset}`, `{limit}`: where the request is in the paging;
 * - `{since}`, `{until}`: an incremental source's window (the lower bound inclusive, the upper
 *   exclusive), ISO timestamps (UTC) or integers; `{sinceEpoch}`, `{untilEpoch}` in epoch seconds
 *   and `{sinceEpochMs}`, `{untilEpochMs}` in milliseconds, for a timestamp cursor;
 * - `{parent.<path>}`, in a child request only (children.ts): a value of the parent record, e.g.
 *   `{parent.id}`, `{parent.links.self}` (any body path, path.ts); percent-encoded in a URL path.
 */
import { startOfDayIn } from '../../contract/business-date.ts';
import { parsePath, PathSyntaxError } from './path.ts';

export interface TemplateValues {
  date: string;
  timeZone: string;
  sourceId: string;
  cursor: string | null;
  page: number | null;
  offset: number | null;
  limit: number;
  /** An incremental source's window (its `until` is null for an integer cursor). */
  window?: { kind: 'timestamp' | 'number'; since: string; until: string | null };
  /** The parent's values of a child request, by the placeholder's path text (`id`, `links.self`). */
  parent?: ParentValues;
}

/** A parent record's values that a child request's templates name, by path text. */
export type ParentValues = Readonly<Record<string, string | number>>;

// `parent.` takes a path (which may hold `:` in brackets), so it is matched before the `:format` form.
const PLACEHOLDER = /\{(parent\.[^{}]+|[A-Za-z]+)(?::([^{}]*))?\}/g;
const PARENT = 'parent.';
/** The placeholders of an incremental source's window (config.ts checks they come with one). */
export const WINDOW_NAMES = ['since', 'sinceEpoch', 'sinceEpochMs', 'until', 'untilEpoch', 'untilEpochMs'];

/** Window placeholders that only a timestamp cursor has. */
export const TIMESTAMP_WINDOW_NAMES = ['sinceEpoch', 'sinceEpochMs', 'until', 'untilEpoch', 'untilEpochMs'];

const NAMES = new Set([
  'date',
  'dayStart',
  'dayEnd',
  'dayStartEpoch',
  'dayEndEpoch',
  'sourceId',
  'cursor',
  'page',
  'offset',
  'limit',
  ...WINDOW_NAMES,
]);
/** Placeholders that stand for a number: a JSON body value that is only one of them stays a number. */
const NUMERIC = new Set(['dayStartEpoch', 'dayEndEpoch', 'page', 'offset', 'limit', ...WINDOW_NAMES]);

/**
 * The problems of a template: unknown placeholders, formats where none is taken, and `{parent.…}`
 * outside a child request (`parent: false`, the default) or with a path that does not parse.
 */
export function templateProblems(text: string, opts: { parent?: boolean } = {}): string[] {
  const problems: string[] = [];
  for (const [, name = '', format] of text.matchAll(PLACEHOLDER)) {
    if (name.startsWith(PARENT)) {
      problems.push(...parentProblems(name.slice(PARENT.length), opts.parent === true));
    } else if (!NAMES.has(name)) {
      problems.push(`unknown placeholder {${name}} (known: ${[...NAMES].join(', ')})`);
    } else if (format !== undefined && name !== 'date') {
      problems.push(`placeholder {${name}} takes no format`);
    } else if (format !== undefined && !/^(yyyy|MM|dd|[^A-Za-z])+$/.test(format)) {
      problems.push(`date format '${format}': use yyyy, MM, dd and separators`);
    }
  }
  return problems;
}

function parentProblems(path: string, allowed: boolean): string[] {
  if (!allowed) return [`placeholder {${PARENT}${path}} is only known in children.request`];
  try {
    parsePath(path);
    return [];
  } catch (err) {
    return [`placeholder {${PARENT}${path}}: ${err instanceof PathSyntaxError ? err.message : String(err)}`];
  }
}

/** The path texts of the `{parent.…}` placeholders of `text`, each once, in order. */
export function parentPaths(text: string): string[] {
  const paths = [...text.matchAll(PLACEHOLDER)]
    .map(([, name = '']) => name)
    .filter((name) => name.startsWith(PARENT))
    .map((name) => name.slice(PARENT.length));
  return [...new Set(paths)];
}

/** The UTC instant (ms) the business day `date` starts at in `timeZone`. */
export function startOfDay(date: string, timeZone: string): number {
  return startOfDayIn(date, timeZone).getTime();
}

function nextDate(date: string): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
}

function formatDate(date: string, format: string): string {
  const [yyyy = '', MM = '', dd = ''] = date.split('-');
  return format.replace(/yyyy|MM|dd/g, (t) => (t === 'yyyy' ? yyyy : t === 'MM' ? MM : dd));
}

function valueOf(name: string, format: string | undefined, v: TemplateValues): string | number | null {
  switch (name) {
    case 'date':
      return format === undefined ? v.date : formatDate(v.date, format);
    case 'dayStart':
      return new Date(startOfDay(v.date, v.timeZone)).toISOString();
    case 'dayEnd':
      return new Date(startOfDay(nextDate(v.date), v.timeZone)).toISOString();
    case 'dayStartEpoch':
      return Math.floor(startOfDay(v.date, v.timeZone) / 1000);
    case 'dayEndEpoch':
      return Math.floor(startOfDay(nextDate(v.date), v.timeZone) / 1000);
    case 'sourceId':
      return v.sourceId;
    case 'cursor':
      return v.cursor;
    case 'page':
      return v.page;
    case 'offset':
      return v.offset;
    case 'limit':
      return v.limit;
    case 'since':
    case 'sinceEpoch':
    case 'sinceEpochMs':
      return windowValue(v, v.window?.since ?? null, name.slice('since'.length));
    case 'until':
    case 'untilEpoch':
    case 'untilEpochMs':
      return windowValue(v, v.window?.until ?? null, name.slice('until'.length));
    default:
      if (name.startsWith(PARENT)) {
        const value = v.parent?.[name.slice(PARENT.length)];
        // The child list's reader reads every named value from the parent before any request.
        if (value === undefined) throw new Error(`no parent value for {${name}}`);
        return value;
      }
      // Templates are checked when the config is validated; an unknown name cannot get here.
      throw new Error(`unknown placeholder {${name}}`);
  }
}

/**
 * A bound of the window as `unit` says (`''`: as stored, `Epoch`: seconds, `EpochMs`); an integer
 * bound within 2^53 as a number, so that a JSON body sends it as one.
 */
function windowValue(v: TemplateValues, bound: string | null, unit: string): string | number | null {
  // Checked when the config is validated: a window placeholder comes with an incremental config.
  if (v.window === undefined) throw new Error('no window: the source is not incremental');
  if (bound === null) return null;
  if (v.window.kind === 'number') {
    const n = Number(bound);
    return Number.isSafeInteger(n) ? n : bound;
  }
  const ms = Date.parse(bound);
  if (unit === 'Epoch') return Math.floor(ms / 1000);
  if (unit === 'EpochMs') return ms;
  return bound;
}

/** Fills the placeholders of `text`; a null value (no cursor yet) fills in as empty text. */
export function render(text: string, v: TemplateValues, encode: (s: string) => string = (s) => s): string {
  return text.replace(PLACEHOLDER, (_, name: string, format: string | undefined) => {
    const value = valueOf(name, format, v);
    return value === null ? '' : encode(String(value));
  });
}

/**
 * Fills the placeholders of a JSON body template: in every string, and a string that is exactly
 * one placeholder takes its value's type (a number). A member whose value is exactly `{cursor}` is
 * left out of its object before the first cursor: strict APIs refuse a null cursor (a `{cursor}`
 * inside a list stays, as null, since leaving it out would move the items after it).
 */
export function renderJson(body: unknown, v: TemplateValues): unknown {
  if (typeof body === 'string') {
    const whole = /^\{(parent\.[^{}]+|[A-Za-z]+)(?::([^{}]*))?\}$/.exec(body);
    // A parent value alone keeps its JSON type too: a numeric id is sent as the parent has it.
    const typed = (n: string) => NUMERIC.has(n) || n === 'cursor' || n.startsWith(PARENT);
    if (whole?.[1] !== undefined && typed(whole[1])) {
      return valueOf(whole[1], whole[2], v);
    }
    return render(body, v);
  }
  if (Array.isArray(body)) return body.map((item) => renderJson(item, v));
  if (body !== null && typeof body === 'object') {
    return Object.fromEntries(
      Object.entries(body)
        .filter(([, item]) => !(item === '{cursor}' && v.cursor === null))
        .map(([k, item]) => [k, renderJson(item, v)]),
    );
  }
  return body;
}

/** Every string of a JSON body template (to check its placeholders). */
export function templateStrings(body: unknown): string[] {
  if (typeof body === 'string') return [body];
  if (Array.isArray(body)) return body.flatMap(templateStrings);
  if (body !== null && typeof body === 'object') return Object.values(body).flatMap(templateStrings);
  return [];
}
