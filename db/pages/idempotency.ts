/**
 * `idempotency_record` (R3): one row per stored step key, with the fingerprint of the request it
 * was stored for and the result a repeat returns. A page's record is read and written by the
 * statements of its store transaction (page-store.ts); expiry is in cleanup.ts.
 */
import { Prisma } from '../../prisma/generated/client.ts';

/** The record of a stored step. */
export interface NewIdempotencyRecord {
  key: string;
  fingerprint: string;
  result: Prisma.InputJsonValue;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * The INSERT of a stored step's record, to run inside a larger statement. Not idempotent: a second
 * insert of the key fails with a unique violation; the caller reads the key's record first, under
 * the run's row lock.
 */
export function insertIdempotencyRecordSql(record: NewIdempotencyRecord): Prisma.Sql {
  return Prisma.sql`
    INSERT INTO idempotency_record (key, fingerprint, result, created_at, expires_at)
    VALUES (${record.key}, ${record.fingerprint}, ${JSON.stringify(record.result)}::jsonb,
            ${record.createdAt}, ${record.expiresAt})`;
}
