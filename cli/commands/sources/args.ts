/**
 * Arguments of the source commands that need reading before the library checks them: integers,
 * durations, and JSON given inline or as `@file`. Each reader leaves the value's own rules to the
 * library (client/sources/fields.ts), so that every command reports the same message.
 */
import { readFile } from 'node:fs/promises';

/** An integer option (`--page-size`): digits only; anything else becomes NaN, which the library refuses. */
export function integerArg(value: string): number {
  return /^\s*-?\d{1,9}\s*$/.test(value) ? Number(value) : Number.NaN;
}

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * A duration in milliseconds: `5000` (milliseconds), `500ms`, `90s`, `5m`, `1h`, `2d`. Anything else is
 * NaN (refused by the library with the bounds in its message).
 */
export function durationMsArg(value: string): number {
  const m = /^\s*(-?\d{1,9})\s*(ms|s|m|h|d)?\s*$/.exec(value);
  if (!m) return Number.NaN;
  return Number(m[1]) * UNIT_MS[(m[2] ?? 'ms') as keyof typeof UNIT_MS];
}

/** A JSON argument read: its value, or the one-line problem (`<option>: …`). */
export type JsonArg = { ok: true; value: unknown } | { ok: false; problem: string };

/**
 * Reads `text` as JSON, or the JSON file it names when it starts with `@` (`@rates.json`). Never
 * throws: an unreadable file or invalid JSON is a one-line problem naming `option`.
 */
export async function readJsonArg(option: string, text: string): Promise<JsonArg> {
  let source = text;
  let where = 'the value';
  if (text.startsWith('@')) {
    const file = text.slice(1);
    where = `file '${file}'`;
    try {
      source = await readFile(file, 'utf8');
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      return {
        ok: false,
        problem: `${option}: cannot read ${where}${typeof code === 'string' ? ` (${code})` : ''}`,
      };
    }
  }
  try {
    return { ok: true, value: JSON.parse(source) as unknown };
  } catch (err) {
    const why = err instanceof SyntaxError ? err.message.replace(/\s+/g, ' ') : 'unreadable';
    return { ok: false, problem: `${option}: ${where} is not valid JSON: ${why}` };
  }
}
