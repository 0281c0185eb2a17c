/**
 * The compensation ledger for operators (R4, R11): reading `downstream_action` rows, and the two
 * things a human may do to one that could not be settled by itself (`needs_manual`): resolve it
 * (it was settled by hand) or retry its compensation. Every such act is recorded in `audit_entry`
 * in the same transaction as the change it made. One module per concept under
 * client/compensations/; this one is what the rest of the project imports.
 */
export type { AuditEntry, DownstreamState } from '../../prisma/generated/client.ts';
export { COMPENSATION_TARGET, isCompensationId, MAX_NOTE_LENGTH, type Compensation } from './common.ts';
export {
  countNeedsManual,
  getCompensation,
  listCompensations,
  type CompensationDetail,
  type ListCompensationsFilter,
} from './read.ts';
export { resolveCompensation, type Resolved, type ResolveOptions } from './resolve.ts';
export { retryCompensation, type RetriedCompensation, type RetryOptions } from './retry.ts';
