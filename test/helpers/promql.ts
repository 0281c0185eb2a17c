/**
 * Reading the PromQL of a Grafana dashboard outside Grafana: its template variables replaced by
 * values Prometheus accepts, and the metric names an expression selects. Used by
 * test/dashboard.test.ts and scripts/dashboard-picture.ts.
 */

/**
 * Grafana's own variables, and what they stand for when Grafana is not there to expand them: a
 * rate window of a few scrapes, a step, the dashboard's range.
 */
const BUILTINS: Record<string, string> = {
  __rate_interval: '5m',
  __interval: '1m',
  __range: '3h',
};

/**
 * `expr` with every `$name` / `${name}` replaced: Grafana's built-ins by {@link BUILTINS} (or
 * `builtins`, e.g. a rate window fit for a short recording), each of `matchAll` (the dashboard's
 * multi-valued label variables) by `.*`, what "All" sends. Throws on any other variable, so a
 * misspelt one fails instead of being passed on as text.
 */
export function expandVariables(
  expr: string,
  matchAll: readonly string[],
  builtins: Readonly<Record<string, string>> = BUILTINS,
): string {
  return expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced?: string, bare?: string) => {
    const name = braced ?? bare ?? '';
    if (name in builtins) return builtins[name]!;
    if (matchAll.includes(name)) return '.*';
    throw new Error(`unknown variable ${whole} in: ${expr}`);
  });
}

/**
 * PromQL words that are not metric names: aggregation operators (written `sum by (x) (…)`, so not
 * always followed by a parenthesis), binary set operators and modifiers, and the number literals.
 */
const KEYWORDS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'atan2',
  'inf',
  'nan',
]);

/**
 * The metric names `expr` selects, in order of appearance, once each. A name is an identifier
 * that is none of: a function (followed by `(`), a keyword, a label name or value (inside `{…}`,
 * or a `by`/`without`/`on`/`ignoring`/`group_left`/`group_right` list), a string, a duration (inside
 * `[…]`, or after `offset`), or part of a number (`1e3`). `{__name__="x"}` names `x`.
 * Expects Grafana variables already expanded ({@link expandVariables}).
 */
export function metricNames(expr: string): string[] {
  const names: string[] = [];
  for (const m of expr.matchAll(/__name__\s*=\s*"([^"]+)"/g)) names.push(m[1]!);
  const s = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '[]')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, '$1()');
  for (const m of s.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = m[0];
    const before = s[m.index - 1] ?? ' ';
    const after = s.slice(m.index + word.length);
    if (KEYWORDS.has(word.toLowerCase())) continue;
    if (/^\s*\(/.test(after)) continue;
    if (/[0-9.]/.test(before)) continue;
    names.push(word);
  }
  return [...new Set(names)];
}

/** `# TYPE` of every metric family a Prometheus text exposition declares: name → type. */
export function metricFamilies(exposition: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(m[1]!, m[2]!);
  return families;
}

/**
 * Why `name` is not a series an exposition with `families` can hold, or undefined when it is: a
 * counter's or gauge's own name; a histogram's `_bucket`, `_sum` or `_count`; a summary's
 * `_sum`, `_count` or own name (its quantiles).
 */
export function missingMetric(name: string, families: ReadonlyMap<string, string>): string | undefined {
  const own = families.get(name);
  if (own && own !== 'histogram') return undefined;
  if (own === 'histogram') return `${name} is a histogram: query its _bucket, _sum or _count`;
  const suffix = /^(.+)_(bucket|sum|count)$/.exec(name);
  const base = suffix && families.get(suffix[1]!);
  if (base === 'histogram') return undefined;
  if (base === 'summary' && suffix![2] !== 'bucket') return undefined;
  return `${name} is not exported`;
}

/**
 * The label names `expr` relies on: those matched in each `metric{…}` selector, and those of its
 * `by`/`without`/`on`/`ignoring`/`group_left`/`group_right` lists (which belong to whichever
 * metric the grouping applies to, so they are returned apart).
 */
export function labelsUsed(expr: string): {
  selectors: { metric: string; labels: string[] }[];
  grouping: string[];
} {
  const s = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  const selectors = [...s.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}/g)].map((m) => ({
    metric: m[1]!,
    labels: [...m[2]!.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1]!),
  }));
  const grouping = [...s.matchAll(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/gi)]
    .flatMap((m) => m[1]!.split(','))
    .map((l) => l.trim())
    .filter(Boolean);
  return { selectors, grouping: [...new Set(grouping)] };
}

/**
 * Label names of every family in a Prometheus text exposition, from its series (a histogram's
 * `_bucket` series give it `le`), keyed by family name as {@link metricFamilies} declares them.
 */
export function familyLabels(exposition: string): Map<string, Set<string>> {
  const families = metricFamilies(exposition);
  const labels = new Map<string, Set<string>>();
  for (const m of exposition.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}/gm)) {
    const series = m[1]!;
    const family = families.has(series) ? series : series.replace(/_(bucket|sum|count)$/, '');
    const set = labels.get(family) ?? new Set<string>();
    for (const l of m[2]!.matchAll(/([a-zA-Z_]\w*)="/g)) set.add(l[1]!);
    labels.set(family, set);
  }
  return labels;
}
