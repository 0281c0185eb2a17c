import type { PrismaClient, Source } from '../prisma/generated/client.ts';
import { failure } from './errors.ts';

/**
 * The source of a run, re-checked at run time (R2): it must still exist and be enabled.
 * @throws ApplicationFailure NotFound (deleted), PermissionDenied (disabled).
 */
export async function loadEnabledSource(
  prisma: Pick<PrismaClient, 'source'>,
  sourceId: string,
): Promise<Source> {
  const source = await prisma.source.findUnique({ where: { id: sourceId } });
  if (!source) throw failure('NotFound', 'SOURCE_NOT_FOUND', `source '${sourceId}' does not exist`);
  if (!source.enabled)
    throw failure('PermissionDenied', 'SOURCE_DISABLED', `source '${sourceId}' is disabled`);
  return source;
}
