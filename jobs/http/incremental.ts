/**
 * Incremental windows of the declarative job: a source that reads what changed since its
 * watermark (the highest cursor value its runs stored: an `updated_at`, an increasing id) rather
 * than a whole business day. Its config names the records' cursor field and its format, where the
 * first run starts, a lookback for late or out-of-order writes, and whether the partner sends a
 * window's records in cursor order; its request sends the window with `{since}` (and `{until}`)
 * placeholders (template.ts). The engine fixes each run's window and moves the watermark with the
 * pages that carry it (activities/job-api/watermark.ts). Guide: docs/http-sources.md.
 */
import { z } from 'zod';
import { type WatermarkSpec, watermarkText } from '../../activities/job-api/index.ts';
import { pathSchema as bodyPath, type Path } from './path.ts';
import { valueAt } from './path.ts';
import { TIMESTAMP_WINDOW_NAMES, templateStrings, WINDOW_NAMES } from './template.ts';

/** How a record's cursor value is written. */
export const CURSOR_FORMATS = ['iso', 'epoch_seconds', 'epoch_millis', 'integer'] as const;
export type CursorFormat = (typeof CURSOR_FORMATS)[number];

/** The longest lookback: a week of seconds (a window that wide is a full re-read by another name). */
const MAX_LOOKBACK = 7 * 24 * 3600;

export const incrementalSchema = z
  .strictObject({
    /** Where the cursor value is in each record (after `records.item`). */
    cursorField: bodyPath.describe(
      'where the cursor value is in each record: updated_at, or an increasing id',
    ),
    format: z
      .enum(CURSOR_FORMATS)
      .default('iso')
      .describe(
        'how the cursor value is written: iso (ISO-8601 with its offset), epoch_seconds, epoch_millis, or integer (an increasing id)',
      ),
    /** Where the first run's window starts. */
    start: z
      .union([z.string().max(40), z.int()])
      .describe(
        'where the first window starts: an ISO-8601 instant with its offset, or an integer for format integer',
      ),
    /** Seconds (integer cursors: units) before the watermark each window starts. */
    lookback: z
      .int()
      .min(0)
      .max(MAX_LOOKBACK)
      .default(0)
      .describe(
        'seconds (format integer: units) before the watermark each window starts: late or out-of-order writes inside it are read again, as upserts',
      ),
    /** The partner sends a window's records in ascending cursor order. */
    ordered: z
      .boolean()
      .default(false)
      .describe(
        "the partner sends a window's records in ascending cursor order: the watermark then moves with every stored page, not only at a run's end",
      ),
  })
  .describe("an incremental source: each run reads what changed since the source's watermark");

export type IncrementalConfig = z.infer<typeof incrementalSchema>;

/** The kind of value a format holds. */
export function kindOf(format: CursorFormat): 'timestamp' | 'number' {
  return format === 'integer' ? 'number' : 'timestamp';
}

/** A record's cursor value as `format` writes it, as the engine's kinds take it. */
export function cursorValue(value: unknown, format: CursorFormat): unknown {
  if (format === 'epoch_seconds' || format === 'epoch_millis') {
    const n = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n)) return undefined;
    return new Date(format === 'epoch_seconds' ? n * 1000 : n);
  }
  return value;
}

/** The spec the engine reads the source's runs by; undefined for a source without `incremental`. */
export function watermarkSpecOf(
  incremental: IncrementalConfig | undefined,
): WatermarkSpec<{ record: unknown }> | undefined {
  if (incremental === undefined) return undefined;
  const kind = kindOf(incremental.format);
  const field: Path = incremental.cursorField;
  return {
    kind,
    valueOf: (r) => cursorValue(valueAt(r.record, field), incremental.format),
    // Validated with the config: a start that is not of the format's kind never gets here.
    start: watermarkText(kind, incremental.start) ?? String(incremental.start),
    lookback: kind === 'timestamp' ? incremental.lookback * 1000 : incremental.lookback,
    ordered: incremental.ordered,
  };
}

// A type, not an interface: zod's addIssue takes an object with an index signature.
type Issue = {
  code: 'custom';
  message: string;
  path: (string | number)[];
};

/** The request templates of a config (the list's, and its child list's, if any). */
function allTemplates(config: {
  request: { path: string; query: Record<string, string>; headers: Record<string, string>; body?: unknown };
  children?:
    | {
        request: {
          path: string;
          query: Record<string, string>;
          headers: Record<string, string>;
          body?: unknown;
        };
      }
    | undefined;
}): string[] {
  const of = (r: typeof config.request) => [
    r.path,
    ...Object.values(r.query),
    ...Object.values(r.headers),
    ...templateStrings(r.body),
  ];
  return [...of(config.request), ...(config.children ? of(config.children.request) : [])];
}

function uses(templates: readonly string[], names: readonly string[]): string[] {
  return names.filter((n) => templates.some((t) => t.includes(`{${n}}`)));
}

/**
 * What is wrong with a config's incremental part: a start not of the format's kind, a window
 * placeholder without `incremental` (or one a format has not), and an `incremental` whose requests
 * send no window (every run would read everything).
 */
export function incrementalIssues(
  config: Parameters<typeof allTemplates>[0] & { incremental?: IncrementalConfig },
): Issue[] {
  const templates = allTemplates(config);
  const used = uses(templates, WINDOW_NAMES);
  const inc = config.incremental;
  if (inc === undefined) {
    return used.map((n) => ({
      code: 'custom' as const,
      message: `placeholder {${n}} needs an incremental config (the window it names)`,
      path: ['incremental'],
    }));
  }
  const issues: Issue[] = [];
  if (config.children !== undefined) {
    // A window of a parent list, or of every child list, are two designs; neither is built.
    issues.push({
      code: 'custom',
      message: 'incremental and children together are not supported: a source reads either',
      path: ['incremental'],
    });
  }
  const kind = kindOf(inc.format);
  if (watermarkText(kind, inc.start) === undefined) {
    issues.push({
      code: 'custom',
      message:
        kind === 'number'
          ? 'incremental.start: expected an integer for format integer'
          : 'incremental.start: expected an ISO-8601 instant with its offset, e.g. 2026-01-01T00:00:00Z',
      path: ['incremental', 'start'],
    });
  }
  if (kind === 'number') {
    for (const n of uses(templates, TIMESTAMP_WINDOW_NAMES)) {
      issues.push({
        code: 'custom',
        message: `placeholder {${n}} needs a timestamp cursor (format iso, epoch_seconds or epoch_millis)`,
        path: ['incremental', 'format'],
      });
    }
  }
  if (!used.some((n) => n.startsWith('since'))) {
    issues.push({
      code: 'custom',
      message:
        'an incremental source must send its window: use {since} (or {sinceEpoch}, {sinceEpochMs}) in the request',
      path: ['incremental'],
    });
  }
  return issues;
}
