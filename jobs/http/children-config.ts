/**
 * Checks of a source's parent → child lists (`children` in config.ts), run when the config is
 * validated so that a mistake fails `sources add`, not a run: the child request's placeholders
 * (`{parent.<path>}` is known there, and only there), that the child request names its parent at
 * all, and the paging rules config.ts applies to the parent list, applied to the child list.
 */
import { parentPaths, templateProblems, templateStrings } from './template.ts';

/** An issue for zod's `ctx.addIssue`, with its path from the config's root. */
export type ConfigIssue = { code: 'custom'; message: string; path: (string | number)[] };

/**
 * A list's request and paging as config.ts parses them, in the few fields read here (config.ts
 * imports this module: it cannot import config.ts's types back).
 */
export interface ListRequest {
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: unknown;
}
interface ListPaging {
  type: string;
  limit?: number | undefined;
  limitParam?: string | null | undefined;
  param?: string | null | undefined;
  totalPath?: unknown;
  hasMorePath?: unknown;
  donePath?: unknown;
  endWhen?: readonly string[] | undefined;
}

/** Every template of a request, with where it is in the config. */
export function requestTemplates(request: ListRequest, at: string[]): [string, string[]][] {
  const { path, query, headers, body } = request;
  return [
    [path, [...at, 'path']],
    ...Object.entries(query).map(([k, t]): [string, string[]] => [t, [...at, 'query', k]]),
    ...Object.entries(headers).map(([k, t]): [string, string[]] => [t, [...at, 'headers', k]]),
    ...templateStrings(body).map((t): [string, string[]] => [t, [...at, 'body']]),
  ];
}

/** The `{parent.<path>}` path texts a child request names, each once (what a parent entry keeps). */
export function childParentPaths(request: ListRequest): string[] {
  return [...new Set(requestTemplates(request, []).flatMap(([text]) => parentPaths(text)))].sort();
}

/** The problems of `config.children`; none when it has none. */
export function childrenIssues(config: {
  children?: { request: ListRequest; pagination: ListPaging } | undefined;
}): ConfigIssue[] {
  const children = config.children;
  if (children === undefined) return [];
  const issues: ConfigIssue[] = [];
  const issue = (message: string, path: (string | number)[]) =>
    issues.push({ code: 'custom', message, path: ['children', ...path] });
  const templates = requestTemplates(children.request, ['request']);
  for (const [text, at] of templates) {
    for (const message of templateProblems(text, { parent: true })) issue(message, at);
  }
  if (childParentPaths(children.request).length === 0) {
    // Without it every parent reads the same list, stored once per parent under different ids.
    issue('children.request must name its parent, e.g. /accounts/{parent.id}/orders', ['request', 'path']);
  }
  // The paging rules of config.ts's parent list, for the child list (see there for the reasons).
  const p = children.pagination;
  if (p.type === 'offset' && p.totalPath === undefined && p.limit === undefined) {
    issue(
      "offset paging without totalPath needs limit (the partner's page size), or a short page could end a child list early",
      ['pagination', 'limit'],
    );
  }
  const sends = (placeholder: string) => templates.some(([t]) => t.includes(placeholder));
  if (
    (p.type === 'cursor' || p.type === 'next_url') &&
    p.endWhen?.includes('absent') === true &&
    !(p.totalPath ?? p.hasMorePath ?? p.donePath ?? p.limitParam) &&
    !sends('{limit}')
  ) {
    issue(
      'endWhen absent needs pagination.totalPath, hasMorePath or donePath, or a limit the request sends (limitParam or {limit}): else a misread cursor path would look like the last page',
      ['pagination', 'endWhen'],
    );
  }
  if ((p.type === 'cursor' || p.type === 'next_url') && p.hasMorePath && p.donePath) {
    issue('a stop flag is hasMorePath or donePath, not both', ['pagination', 'donePath']);
  }
  if (p.type === 'cursor' && p.param === null && !sends('{cursor}')) {
    issue('with param null, the request must send {cursor} itself (in its path, query, headers or body)', [
      'pagination',
      'param',
    ]);
  }
  return issues;
}
