/**
 * Connections to Temporal for clients and workers, with one clear error when it is unreachable.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { type Config, temporalAddress } from './config.ts';
import { UserFacingError, errorMessage } from './errors.ts';

function options(config: Config) {
  return config.temporal.connection ?? { address: temporalAddress(config) };
}

function unreachable(config: Config, err: unknown): UserFacingError {
  const hint = config.temporal.address
    ? 'check TEMPORAL_ADDRESS and its TLS/API key settings'
    : 'is `npm start` running? or set TEMPORAL_ADDRESS';
  return new UserFacingError(
    `cannot reach Temporal at ${temporalAddress(config)} (${hint}): ${errorMessage(err)}`,
    'TEMPORAL_UNREACHABLE',
    { cause: err },
  );
}

/** A Temporal client for the configured namespace. @throws UserFacingError when unreachable. */
export async function connectClient(config: Config, connectTimeout = '10s'): Promise<Client> {
  try {
    const connection = await Connection.connect({ ...options(config), connectTimeout });
    return new Client({ connection, namespace: config.temporal.namespace });
  } catch (err) {
    throw unreachable(config, err);
  }
}

/** The worker's native connection. @throws UserFacingError when unreachable. */
export async function connectNative(config: Config): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect(options(config));
  } catch (err) {
    throw unreachable(config, err);
  }
}
