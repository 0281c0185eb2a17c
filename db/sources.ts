/**
 * `source` reads of the engine at run time (R2): a run re-reads its source at every step, so an
 * operator's change (disabled, paused, new settings) takes effect on the next step.
 */
import { Prisma, type PrismaClient, type Source } from '../prisma/generated/client.ts';

/** The source `sourceId`, or null when it does not exist. Read-only. */
export async function findSource(db: Pick<PrismaClient, 'source'>, sourceId: string): Promise<Source | null> {
  return db.source.findUnique({ where: { id: sourceId } });
}

/** Every field of a source and its column: a field the model gains and this lacks does not compile. */
const SOURCE_COLUMNS: Record<keyof Source, string> = {
  id: 'id',
  name: 'name',
  baseUrl: 'base_url',
  credentialsRef: 'credentials_ref',
  timezone: 'timezone',
  retryPolicy: 'retry_policy',
  downstream: 'downstream',
  pageSize: 'page_size',
  enabled: 'enabled',
  jobType: 'job_type',
  config: 'config',
  schedule: 'schedule',
  submitSummary: 'submit_summary',
  submitMaxProcessingMs: 'submit_max_processing_ms',
  maxRunTimeMs: 'max_run_time_ms',
  localFetch: 'local_fetch',
  pausedAt: 'paused_at',
  pausedReason: 'paused_reason',
  pausedBy: 'paused_by',
  removedAt: 'removed_at',
  removedBy: 'removed_by',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
};

/** Prefix of the columns {@link sourceColumns} selects, apart from the statement's own. */
const PREFIX = 'source.';

/**
 * The whole row of the source table aliased `alias`, for a raw statement that reads a source
 * beside what it does (one round trip instead of two); {@link sourceOfRow} takes it back out.
 */
export function sourceColumns(alias: string): Prisma.Sql {
  return Prisma.raw(
    Object.entries(SOURCE_COLUMNS)
      .map(([field, column]) => `${alias}.${column} AS "${PREFIX}${field}"`)
      .join(', '),
  );
}

/** The source a row of {@link sourceColumns} carries, as findSource reads it; null when none joined. */
export function sourceOfRow(row: Record<string, unknown>): Source | null {
  if (row[`${PREFIX}id`] == null) return null;
  const source: Record<string, unknown> = {};
  for (const field of Object.keys(SOURCE_COLUMNS)) source[field] = row[`${PREFIX}${field}`];
  return source as unknown as Source;
}

/** Enabled sources whose job is none of `jobTypes`, by id. Read-only. */
export async function enabledSourcesOfOtherJobs(
  db: Pick<PrismaClient, 'source'>,
  jobTypes: readonly string[],
): Promise<{ id: string; jobType: string }[]> {
  return db.source.findMany({
    where: { enabled: true, jobType: { notIn: [...jobTypes] } },
    select: { id: true, jobType: true },
    orderBy: { id: 'asc' },
  });
}

/** The source row, locked for the rest of the transaction; undefined when there is none. */
export async function lockSource(tx: Prisma.TransactionClient, id: string): Promise<Source | undefined> {
  const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM source WHERE id = ${id} FOR UPDATE`;
  if (locked.length === 0) return undefined;
  return tx.source.findUniqueOrThrow({ where: { id } });
}
