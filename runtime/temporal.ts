/**
 * Connections to Temporal for clients and workers, with one clear error when it is unreachable,
 * refuses the TLS handshake or the credentials, or has no such namespace (temporal-failures.ts).
 */
import { Client, type ClientInterceptors, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { type Config, temporalAddress } from './config.ts';
import { UserFacingError, errorMessage } from './errors.ts';
import { isPortAccepting } from './process-utils.ts';
import { checkHandshake, checkNamespace, connectFailure } from './temporal-failures.ts';
import { activeTracing } from './tracing-env.ts';

function options(config: Config) {
  return config.temporal.connection ?? { address: temporalAddress(config) };
}

/**
 * Fails fast when nothing accepts TCP connections at the address, or the TLS handshake fails: the
 * SDK would otherwise retry until its whole connect deadline passes and then report only
 * "deadline exceeded".
 */
async function probe(config: Config): Promise<void> {
  const address = options(config).address ?? temporalAddress(config);
  let host: string;
  let port: number;
  try {
    const url = new URL(`tcp://${address}`);
    host = url.hostname.replace(/^\[|\]$/g, '');
    port = url.port ? Number(url.port) : 7233;
  } catch {
    return; // Not host:port; let the SDK judge it.
  }
  if (!(await isPortAccepting(port, host, 3_000))) {
    throw unreachable(config, new Error(`nothing accepts connections at ${host}:${port}`));
  }
  await checkHandshake(config, host, port, 3_000);
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

/**
 * A run's trace starts at the call that starts it (the CLI, the client API, the outbox's start
 * command): the client's span goes to the workflow in its start's headers. Loaded only when the
 * process traces.
 */
async function tracingInterceptors(): Promise<ClientInterceptors> {
  const { OpenTelemetryWorkflowClientInterceptor } =
    await import('@temporalio/interceptors-opentelemetry/lib/client/index.js');
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}

/**
 * A Temporal client for the configured namespace, which it checks exists.
 * @throws UserFacingError when it cannot be used (see the module comment).
 */
export async function connectClient(config: Config, connectTimeout = '10s'): Promise<Client> {
  await probe(config);
  try {
    const connection = await Connection.connect({ ...options(config), connectTimeout });
    await checkNamespace(connection, config.temporal.namespace).catch(async (err: unknown) => {
      await connection.close();
      throw err;
    });
    return new Client({
      connection,
      namespace: config.temporal.namespace,
      ...(activeTracing() ? { interceptors: await tracingInterceptors() } : {}),
    });
  } catch (err) {
    throw connectFailure(config, err) ?? unreachable(config, err);
  }
}

/** The worker's native connection. @throws UserFacingError when unreachable. */
export async function connectNative(config: Config): Promise<NativeConnection> {
  await probe(config);
  try {
    return await NativeConnection.connect(options(config));
  } catch (err) {
    throw connectFailure(config, err) ?? unreachable(config, err);
  }
}
