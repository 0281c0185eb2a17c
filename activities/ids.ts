import { createHash } from 'node:crypto';

/**
 * A UUID derived from a stable name (SHA-256 based, version nibble 8 = "custom" per RFC 9562).
 * Outbox event ids are derived from their step's idempotency key, so the same step can never
 * produce two different event ids: consumers dedupe on it (R5).
 */
export function stableUuid(name: string): string {
  const h = createHash('sha256').update(name).digest('hex');
  const variant = ((parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** SHA-256 hex of a value's JSON form: the request fingerprint of an idempotency record. */
export function fingerprint(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}
