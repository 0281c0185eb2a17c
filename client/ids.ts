/**
 * Ids users type: a FetchRun, dead letter or compensation id is a UUID; anything else (a workflow
 * id, `<source>/<date>`) is looked up another way.
 */
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `id` is written as a UUID. */
export function isUuid(id: string): boolean {
  return UUID_RE.test(id);
}
