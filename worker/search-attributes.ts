/**
 * durable-fetch's custom search attributes: registered by the dev server this project starts
 * (temporal-dev-server.ts) and checked/added on an external server (TEMPORAL_ADDRESS).
 */
import { isGrpcServiceError, type ConnectionLike } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes.js';
import { UserFacingError } from '../runtime/errors.ts';

/**
 * The custom search attributes durable-fetch's workflows set, with their types as the Temporal CLI
 * spells them (`--search-attribute FetchSource=Keyword`).
 */
export const SEARCH_ATTRIBUTES = {
  FetchSource: 'Keyword',
  FetchDate: 'Keyword',
  JobType: 'Keyword',
  FetchStatus: 'Keyword',
} as const;

/** gRPC status codes (from the gRPC spec; @grpc/grpc-js is not a direct dependency). */
const GRPC = { ALREADY_EXISTS: 6, PERMISSION_DENIED: 7, UNIMPLEMENTED: 12, UNAUTHENTICATED: 16 } as const;

/**
 * For a server this project did not start (TEMPORAL_ADDRESS): makes sure every
 * {@link SEARCH_ATTRIBUTES} entry exists on `namespace`, adding missing ones one by one via the
 * operator service. Idempotent; safe against a concurrent caller (AlreadyExists is success).
 * Resolves with the names this call added ([] when all existed). Throws `UserFacingError` code
 * `TEMPORAL_SEARCH_ATTRIBUTES` when one exists with another type or the server refuses to add them
 * (no permission, Temporal Cloud); other RPC errors propagate unchanged.
 */
export async function ensureSearchAttributes(
  connection: Pick<ConnectionLike, 'operatorService'>,
  namespace: string,
): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const existing = customAttributes ?? {};
  const added: string[] = [];
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    const wanted = encodeSearchAttributeIndexedValueType(type.toUpperCase() as Uppercase<typeof type>);
    if (wanted === undefined) throw new Error(`unknown search attribute type ${type}`);
    const current = existing[name];
    if (current !== undefined && current !== null) {
      if (current !== wanted) {
        throw new UserFacingError(
          `Search attribute ${name} exists on namespace "${namespace}" with another type; durable-fetch needs ${type}. ` +
            'Use another namespace, or remove and re-create the attribute.',
          'TEMPORAL_SEARCH_ATTRIBUTES',
        );
      }
      continue;
    }
    try {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: { [name]: wanted },
      });
      added.push(name);
    } catch (error) {
      const code = isGrpcServiceError(error) ? Number(error.code) : undefined;
      if (code === GRPC.ALREADY_EXISTS) continue;
      const refused: (number | undefined)[] = [
        GRPC.PERMISSION_DENIED,
        GRPC.UNIMPLEMENTED,
        GRPC.UNAUTHENTICATED,
      ];
      if (isGrpcServiceError(error) && refused.includes(code)) {
        const commands = Object.entries(SEARCH_ATTRIBUTES)
          .map(
            ([n, t]) =>
              `  temporal operator search-attribute create --namespace ${namespace} --name ${n} --type ${t}`,
          )
          .join('\n');
        throw new UserFacingError(
          `The Temporal server refused to add search attribute ${name} to namespace "${namespace}" ` +
            `(${error.details || error.message}). Ask an operator to create them (on Temporal Cloud: tcld or the web console):\n${commands}`,
          'TEMPORAL_SEARCH_ATTRIBUTES',
          { cause: error },
        );
      }
      throw error;
    }
  }
  return added;
}
