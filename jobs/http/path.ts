/**
 * Paths into a partner's JSON body, for the declarative job's config: where the records are, the
 * next cursor, a stop flag, a total. One parser, used when a config is validated; what it returns
 * (a list of segments) is what the config stores and what a run reads, so a path can never be
 * accepted as one thing and read as another.
 *
 * Text form: `data.items`, `meta.next_cursor`, `items[0].id`, `data[-1].id` (an index from the end:
 * keyset paging from the last record), and brackets for a key that is not a bare name:
 * `['@odata.nextLink']`, `meta["next cursor"]`. A bare name holds letters, digits, `_`, `$`, `@` and
 * `-`; a dot between names separates keys, so `@odata.nextLink` is the key `@odata` and then
 * `nextLink`; a bare integer is an index (`items.0.id` is `items[0].id`). A leading `$.` or `$[` is JSONPath's root and is dropped. Array form: `["records", -1,
 * "id"]`, strings being keys verbatim and integers indices.
 */
import { z } from 'zod';
import { redactFreeText } from '../../runtime/redact.ts';

/** A key of an object, or an index of an array (negative: from its end). */
export type Segment = string | number;
export type Path = readonly Segment[];

/** Longest path accepted, in segments and in characters of one key. */
const MAX_SEGMENTS = 20;
const MAX_KEY_LENGTH = 200;
const BARE = /^[A-Za-z0-9_$@-]+$/;
/** A bare name that is an index (`0`, `-1`): read as one, never as a key. */
const INTEGER = /^(0|-?[1-9][0-9]*)$/;
/** Bare names of digits only: an index, or refused (`01`); a key of digits is written in brackets. */
const DIGITS = /^-?[0-9]+$/;
const BARE_CHAR = /[A-Za-z0-9_$@-]/;

/** Why a path's text could not be parsed, and where. */
export class PathSyntaxError extends Error {
  constructor(
    readonly text: string,
    readonly position: number,
    detail: string,
  ) {
    super(`path '${text}': ${detail} at character ${position + 1}`);
    this.name = 'PathSyntaxError';
  }
}

/**
 * The segments of a path's text. Strict: anything the grammar does not name is an error, never
 * read some other way.
 * @throws PathSyntaxError
 */
export function parsePath(text: string): Path {
  const segments: Segment[] = [];
  let i = 0;
  const fail = (detail: string, at = i): never => {
    throw new PathSyntaxError(text, at, detail);
  };
  if (text.startsWith('$.') || text.startsWith('$[')) i = text[1] === '.' ? 2 : 1;
  if (i >= text.length) fail('a path needs at least one key');
  let first = true;
  while (i < text.length) {
    const c = text[i];
    if (c === '[') {
      i += 1;
      const quote = text[i];
      if (quote === "'" || quote === '"') {
        let key = '';
        i += 1;
        for (;;) {
          const ch = text[i];
          if (ch === undefined) fail(`unterminated ${quote}`);
          if (ch === '\\') {
            const escaped = text[i + 1];
            if (escaped !== '\\' && escaped !== "'" && escaped !== '"')
              fail('a backslash escapes only \\, \' and "');
            key += escaped;
            i += 2;
          } else if (ch === quote) {
            i += 1;
            break;
          } else {
            key += ch;
            i += 1;
          }
        }
        if (key === '') fail('an empty key');
        if (key.length > MAX_KEY_LENGTH) fail(`a key longer than ${MAX_KEY_LENGTH} characters`);
        segments.push(key);
      } else {
        const match = /^(0|-?[1-9][0-9]{0,8})/.exec(text.slice(i));
        if (!match)
          fail("expected an index such as [0] or [-1], or a quoted key such as ['@odata.nextLink']");
        const digits = match?.[0] ?? '';
        segments.push(Number(digits));
        i += digits.length;
      }
      if (text[i] !== ']') fail("expected ']'");
      i += 1;
    } else {
      if (!first) {
        if (c !== '.') fail("expected '.' or '[' between keys");
        i += 1;
      }
      const start = i;
      while (i < text.length && BARE_CHAR.test(text[i] ?? '')) i += 1;
      if (i === start) {
        fail(
          text[i] === undefined
            ? 'a path cannot end with a dot'
            : `'${text[i]}' cannot be part of a bare key: write the key in brackets, e.g. ['a key']`,
        );
      }
      const key = text.slice(start, i);
      if (key.length > MAX_KEY_LENGTH) fail(`a key longer than ${MAX_KEY_LENGTH} characters`, start);
      // A bare integer is an index, as in `items.0.id` or `data.-1.id`: the same as `[0]`, `[-1]`.
      if (DIGITS.test(key) && !INTEGER.test(key)) {
        fail(`'${key}' is neither an index nor a bare key: write ['${key}'] for a key`, start);
      }
      if (INTEGER.test(key)) {
        if (key.length > 10) fail('an index of more than 9 digits', start);
        segments.push(Number(key));
      } else segments.push(key);
    }
    first = false;
    if (segments.length > MAX_SEGMENTS) fail(`more than ${MAX_SEGMENTS} segments`);
  }
  return segments;
}

/** A path as text that {@link parsePath} reads back as the same segments. Pure. */
export function formatPath(path: Path): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (BARE.test(segment) && !DIGITS.test(segment) && !(text === '' && segment === '$')) {
      text += text === '' ? segment : `.${segment}`;
    } else text += `['${segment.replace(/[\\']/g, (ch) => `\\${ch}`)}']`;
  }
  return text;
}

/** What reading a path found: its value, or how far it got and what keys were there instead. */
export type Read =
  | { found: true; value: unknown }
  | {
      found: false;
      /** Segments that resolved before it stopped. */
      reached: number;
      /** The keys of the object where it stopped (an array's: its length as `[n items]`). */
      keys: string[];
    };

/** The value one segment names in `value`, own properties only (never `constructor` and kin). */
function step(value: unknown, segment: Segment): { ok: true; value: unknown } | { ok: false } {
  if (Array.isArray(value)) {
    // A key is a key: only an index reads an array (`['0']` names a member called "0").
    if (typeof segment !== 'number') return { ok: false };
    const index = segment < 0 ? value.length + segment : segment;
    return index >= 0 && index < value.length ? { ok: true, value: value[index] } : { ok: false };
  }
  if (value !== null && typeof value === 'object' && typeof segment === 'string') {
    return Object.hasOwn(value, segment)
      ? { ok: true, value: (value as Record<string, unknown>)[segment] }
      : { ok: false };
  }
  return { ok: false };
}

function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return [`[${value.length} items]`];
  if (value !== null && typeof value === 'object') return Object.keys(value);
  return [];
}

/** Reads `path` in a parsed JSON body. Pure. */
export function readPath(body: unknown, path: Path): Read {
  let value = body;
  for (const [i, segment] of path.entries()) {
    const next = step(value, segment);
    if (!next.ok) return { found: false, reached: i, keys: keysOf(value) };
    value = next.value;
  }
  return { found: true, value };
}

/** The value at `path`, or undefined when it does not resolve. Pure. */
export function valueAt(body: unknown, path: Path): unknown {
  const read = readPath(body, path);
  return read.found ? read.value : undefined;
}

/**
 * When `path` stopped at an object holding a key that is the rest of the path written with dots
 * (`@odata.nextLink` read as `@odata` then `nextLink`), that key in bracket form: the config
 * almost certainly meant it. Undefined otherwise. Pure.
 */
export function dottedKeyHint(read: Read, path: Path): string | undefined {
  if (read.found) return undefined;
  const rest = path.slice(read.reached);
  if (rest.length < 2 || !rest.every((s) => typeof s === 'string')) return undefined;
  const joined = rest.join('.');
  if (!read.keys.includes(joined)) return undefined;
  return formatPath([...path.slice(0, read.reached), joined]);
}

/**
 * Why a path did not resolve, in words: the path, what the body held where it stopped (keys only,
 * never values), and the bracket form when the key has dots in it. Pure.
 */
export function notFoundText(read: Exclude<Read, { found: true }>, path: Path, role: string): string {
  const hint = dottedKeyHint(read, path);
  const where = read.reached === 0 ? 'the body' : formatPath(path.slice(0, read.reached));
  return (
    `${role} ${formatPath(path)} is not in the response: ${where} has ${describeKeys(read.keys)}` +
    (hint === undefined ? '' : `; the key has dots in it: write ${hint}`)
  );
}

/** At most `max` keys, each cut short, for a failure message (keys only, never values). */
export function describeKeys(keys: readonly string[], max = 12): string {
  if (keys.length === 0) return 'no keys';
  // Keys are the partner's data too (a map keyed by e-mail address or token): scrubbed as its words.
  const shown = keys.slice(0, max).map((k) => {
    const key = redactFreeText(k);
    return key.length > 40 ? `${key.slice(0, 40)}…` : key;
  });
  return `keys ${shown.join(', ')}${keys.length > max ? `, … (${keys.length} in all)` : ''}`;
}

const segmentsSchema = z
  .array(z.union([z.string().min(1).max(MAX_KEY_LENGTH), z.int().min(-1_000_000_000).max(1_000_000_000)]))
  .min(1)
  .max(MAX_SEGMENTS);

/**
 * A path in a config: text or a list of segments, parsed once here; the parsed list is what the
 * config holds from then on (and parses as itself).
 */
export const pathSchema = z
  .union([z.string().min(1).max(1000), segmentsSchema])
  .transform((input, ctx): Path => {
    if (typeof input !== 'string') return input;
    try {
      return parsePath(input);
    } catch (err) {
      // `continue`: the config's other checks still run, so that every problem is named at once.
      ctx.addIssue({
        code: 'custom',
        message: err instanceof Error ? err.message : String(err),
        continue: true,
      });
      return z.NEVER;
    }
  })
  .describe(
    "a path into the JSON body: text such as meta.next_cursor, data[-1].id, ['@odata.nextLink'], or a list of keys and indices",
  );
