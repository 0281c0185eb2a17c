/**
 * The one insert of an `audit_entry` row: who did what to which target, and why. Every audited
 * change (operator commands, replays, the stuck-run sweep) writes its entry through here, inside
 * the transaction of the change it records, so an entry exists exactly when the change committed.
 */
import type { Prisma, PrismaClient } from '../prisma/generated/client.ts';

/** `target_type` of the audit entries about a dead letter. */
export const DEAD_LETTER_TARGET = 'dead_letter';

/** An audit entry as written. */
export interface AuditRecord {
  /** A person (`--by`, or the OS user) or a process, e.g. `system:sweep`. */
  actor: string;
  /** `<target type>.<verb>`, e.g. `compensation.resolve`, `run.settle_stuck`. */
  action: string;
  targetType: string;
  targetId: string;
  /** Free text the actor gave, or what a process found. */
  reason?: string | null;
  /** Facts of the change (ids, before/after); never a payload or a secret. */
  details?: Prisma.InputJsonObject;
}

/**
 * Inserts one entry through `db` (a transaction client, to share the change's commit).
 * Not idempotent: each call adds a row. @throws database errors as Prisma throws them.
 */
export async function recordAudit(db: Pick<PrismaClient, 'auditEntry'>, entry: AuditRecord): Promise<void> {
  await db.auditEntry.create({
    data: {
      actor: entry.actor,
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId,
      reason: entry.reason ?? null,
      ...(entry.details === undefined ? {} : { details: entry.details }),
    },
  });
}
