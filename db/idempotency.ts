/**
 * `idempotency_record` (R3): one row per stored step key, with the fingerprint of the request it
 * was stored for and the result a repeat returns. Expiry is in cleanup.ts.
 */
import type { IdempotencyRecord, Prisma, PrismaClient } from '../prisma/generated/client.ts';

/** The record of `key`, or null. Read-only; inside a page's transaction, after the run's lock. */
export async function findIdempotencyRecord(
  db: Pick<PrismaClient, 'idempotencyRecord'>,
  key: string,
): Promise<IdempotencyRecord | null> {
  return db.idempotencyRecord.findUnique({ where: { key } });
}

/**
 * Inserts the record of a stored step. Not idempotent: a second insert of the key fails with a
 * unique violation (P2002); the caller checks {@link findIdempotencyRecord} first, under the
 * run's row lock.
 */
export async function insertIdempotencyRecord(
  db: Pick<PrismaClient, 'idempotencyRecord'>,
  record: {
    key: string;
    fingerprint: string;
    result: Prisma.InputJsonValue;
    createdAt: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await db.idempotencyRecord.create({ data: record });
}
