/**
 * The error of a statement the engine sent on a Prisma transaction's connection through the
 * driver itself (db/transaction.ts): node-postgres's error is its `cause`, with PostgreSQL's
 * SQLSTATE and severity or the socket's code, as activities/database-errors.ts reads them. A
 * statement refused before it was sent has a `code` of its own instead.
 */
export class DriverStatementError extends Error {
  override readonly name = 'DriverStatementError';
  readonly code: string | undefined;

  constructor(message: string, options: { cause?: unknown; code?: string } = {}) {
    super(message, { cause: options.cause });
    this.code = options.code;
  }
}
