/**
 * Placeholders of the declarative job's request templates. A template is text with `{name}` or
 * `{name:format}`; what a run knows at request time fills them in:
 * - `{date}` the business date `YYYY-MM-DD`; `{date:FORMAT}` with `yyyy`, `MM`, `dd` (e.g.
 *   `{date:yyyyMMdd}`, `{date:dd/MM/yyyy}`);
 * - `{dayStart}`, `{dayEnd}`: the business day's first instant and the next day's, in the source's
 *   timezone, as ISO timestamps (UTC); `{dayStartEpoch}`, `{dayEndEpoch}`: the same in epoch seconds;
 * - `{sourceId}`; `{cursor}`, `{page}`, `{offset}`, `{limit}`: where the request is in the paging.
 */
import { startOfDayIn } from '../../contract/business-date.ts';

export interface TemplateValues {
  date: string;
  timeZone: string;
  sourceId: string;
  cursor: string | null;
  page: number | null;
  offset: number | null;
  limit: number;
}

const PLACEHOLDER = /\{([A-Za-z]+)(?::([^{}]*))?\}/g;
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
]);
/** Placeholders that stand for a number: a JSON body value that is only one of them stays a number. */
const NUMERIC = new Set(['dayStartEpoch', 'dayEndEpoch', 'page', 'offset', 'limit']);

/** The problems of a template: unknown placeholders, formats where none is taken. */
export function templateProblems(text: string): string[] {
  const problems: string[] = [];
  for (const [, name = '', format] of text.matchAll(PLACEHOLDER)) {
    if (!NAMES.has(name)) {
      problems.push(`unknown placeholder {${name}} (known: ${[...NAMES].join(', ')})`);
    } else if (format !== undefined && name !== 'date') {
      problems.push(`placeholder {${name}} takes no format`);
    } else if (format !== undefined && !/^(yyyy|MM|dd|[^A-Za-z])+$/.test(format)) {
      problems.push(`date format '${format}': use yyyy, MM, dd and separators`);
    }
  }
  return problems;
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
    default:
      // Templates are checked when the config is validated; an unknown name cannot get here.
      throw new Error(`unknown placeholder {${name}}`);
  }
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
    const whole = /^\{([A-Za-z]+)(?::([^{}]*))?\}$/.exec(body);
    if (whole?.[1] !== undefined && (NUMERIC.has(whole[1]) || whole[1] === 'cursor')) {
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
