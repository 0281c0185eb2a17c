/**
 * Canonical JSON (object keys sorted), so that equal values compare equal whatever their key
 * order: how a source's config or a downstream's settings in a file are compared with the table's.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
