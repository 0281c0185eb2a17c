/**
 * Why a connection to a Temporal frontend failed, as one line that names the setting to check: a
 * TLS handshake refused by either side, credentials refused, a namespace the server does not have.
 * Never includes an API key or the contents of a key file (only what the server or the TLS stack
 * says, and setting names).
 */
import net from 'node:net';
import tls from 'node:tls';
import { type Connection, isGrpcServiceError, NamespaceNotFoundError } from '@temporalio/client';
import { type Config, temporalAddress } from './config.ts';
import { errorMessage, UserFacingError } from './errors.ts';

type ConnectionOptions = NonNullable<Config['temporal']['connection']>;

/** gRPC status codes (from the gRPC spec; @grpc/grpc-js is not a direct dependency). */
const GRPC = { NOT_FOUND: 5, PERMISSION_DENIED: 7, UNAUTHENTICATED: 16 } as const;

/** HTTP/2's client preface and an empty SETTINGS frame: any HTTP/2 server answers it at once. */
const H2_PREFACE = Buffer.concat([
  Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
  Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
]);

/** OpenSSL's names for a server certificate this client does not accept. */
const UNTRUSTED_SERVER = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

type TlsSettings = Exclude<ConnectionOptions['tls'], boolean | null | undefined>;

/** How the server met the first words of a connection. */
type FirstAnswer =
  | { answered: true }
  | {
      answered: false;
      error?: NodeJS.ErrnoException;
      /** Connected (with TLS: the handshake done) before it failed. */
      connected: boolean;
      timedOut?: boolean;
    };

/** Connects as the SDK will (TLS with its CA, client certificate and server name; HTTP/2) and waits for the first bytes. */
function firstAnswer(host: string, port: number, settings: TlsSettings | undefined, timeoutMs: number) {
  return new Promise<FirstAnswer>((resolve) => {
    let socket: net.Socket;
    let connected = false;
    try {
      socket = settings
        ? tls.connect({
            host,
            port,
            // An IP address is checked against the certificate without SNI (RFC 6066 has none).
            ...((settings.serverNameOverride ?? (net.isIP(host) ? undefined : host))
              ? { servername: settings.serverNameOverride ?? host }
              : {}),
            ...(settings.serverRootCACertificate
              ? { ca: Buffer.from(settings.serverRootCACertificate) }
              : {}),
            ...(settings.clientCertPair
              ? {
                  cert: Buffer.from(settings.clientCertPair.crt),
                  key: Buffer.from(settings.clientCertPair.key),
                }
              : {}),
            ALPNProtocols: ['h2'],
          })
        : net.connect({ host, port });
    } catch (err) {
      // The certificate or key could not even be loaded (not PEM, or a key of another certificate).
      resolve({ answered: false, error: err as NodeJS.ErrnoException, connected });
      return;
    }
    const done = (answer: FirstAnswer) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done({ answered: false, connected, timedOut: true }), timeoutMs);
    socket.once(settings ? 'secureConnect' : 'connect', () => {
      connected = true;
      socket.write(H2_PREFACE);
    });
    socket.once('data', () => done({ answered: true }));
    socket.once('error', (error: NodeJS.ErrnoException) => done({ answered: false, error, connected }));
    socket.once('close', () => done({ answered: false, connected }));
  });
}

/**
 * Speaks first to the server the way the SDK will and waits for its first answer: the SDK itself
 * reports a refused TLS handshake only as "Failed to connect before the deadline", after its whole
 * connect timeout. Resolves when the server answered, or could not be judged within `timeoutMs`
 * (the SDK then has its say). Side effect: one short connection to the server.
 * @throws UserFacingError `TEMPORAL_TLS` naming the side that refused and the setting to check.
 */
export async function checkHandshake(
  config: Config,
  host: string,
  port: number,
  timeoutMs: number,
): Promise<void> {
  const tlsOption = config.temporal.connection?.tls;
  const settings = tlsOption ? (tlsOption === true ? {} : tlsOption) : undefined;
  const answer = await firstAnswer(host, port, settings, timeoutMs);
  if (answer.answered || answer.timedOut) return;
  const code = answer.error?.code ?? (settings && answer.connected ? 'closed after the handshake' : 'closed');
  const fail = (what: string, check: string) =>
    new UserFacingError(`Temporal at ${host}:${port}: ${what} (${code}); check ${check}`, 'TEMPORAL_TLS', {
      cause: answer.error,
    });
  if (!settings) {
    throw fail(
      'the server does not answer plaintext HTTP/2; it may expect TLS',
      'TEMPORAL_ADDRESS, and TEMPORAL_TLS=true with the TEMPORAL_TLS_* settings if it does',
    );
  }
  const clientCert = settings.clientCertPair
    ? 'TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH'
    : 'TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH, of which none is set';
  if (UNTRUSTED_SERVER.has(code)) {
    throw fail(
      "the server's certificate is not trusted",
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH, and TEMPORAL_TLS_SERVER_NAME when the certificate names another host',
    );
  }
  // A server refuses a client certificate with an alert (Go, Envoy) or, once the handshake is
  // over, by closing the connection unanswered (Node).
  if (
    /^ERR_SSL_.*ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_|ACCESS_DENIED|DECRYPT_ERROR)/.test(code) ||
    (answer.connected && !answer.error)
  ) {
    throw fail(`the server refused the client certificate`, clientCert);
  }
  if (/^ERR_OSSL_/.test(code)) {
    throw fail(
      'a certificate or key cannot be loaded',
      'TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH (the key of that certificate) and TEMPORAL_TLS_SERVER_CA_CERT_PATH, all PEM',
    );
  }
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ECONNRESET' || code === 'closed') {
    throw fail('the TLS handshake failed; the port may not speak TLS', 'TEMPORAL_ADDRESS and TEMPORAL_TLS');
  }
  throw fail(`the TLS handshake failed: ${errorMessage(answer.error)}`, 'the TEMPORAL_TLS_* settings');
}

/** The gRPC status of an SDK error: its own, or its cause's (the client wraps the first call's). */
function grpcStatus(err: unknown): { code: number; details: string } | undefined {
  for (let e = err; e instanceof Error; e = e.cause) {
    // One line whatever the server sent.
    if (isGrpcServiceError(e))
      return { code: Number(e.code), details: (e.details || e.message).replace(/\s+/g, ' ') };
  }
  return undefined;
}

/** Which setting holds the credentials the server refused. */
function credentialSetting(options: ConnectionOptions | undefined): string {
  if (options?.apiKey) return "TEMPORAL_API_KEY or the profile's api_key";
  if (options?.tls && options.tls !== true && options.tls.clientCertPair) {
    return 'TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH';
  }
  return 'TEMPORAL_API_KEY, or TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH, of which none is set';
}

/**
 * The one-line error for a failed connect or namespace check when the server said why (credentials
 * refused, namespace missing); undefined otherwise (the caller reports it as unreachable).
 * A {@link UserFacingError} is returned as it is.
 */
export function connectFailure(config: Config, err: unknown): UserFacingError | undefined {
  if (err instanceof UserFacingError) return err;
  const at = `Temporal at ${temporalAddress(config)}`;
  const { namespace } = config.temporal;
  if (err instanceof NamespaceNotFoundError) return namespaceMissing(at, namespace, err);
  const status = grpcStatus(err);
  switch (status?.code) {
    case GRPC.UNAUTHENTICATED:
      return new UserFacingError(
        `${at} refused the credentials (UNAUTHENTICATED: ${status.details}); check ${credentialSetting(config.temporal.connection)}`,
        'TEMPORAL_AUTH',
        { cause: err },
      );
    case GRPC.PERMISSION_DENIED:
      return new UserFacingError(
        `${at} denied access to namespace "${namespace}" (PERMISSION_DENIED: ${status.details}); ` +
          'check TEMPORAL_NAMESPACE, and that the API key or client certificate may use it',
        'TEMPORAL_AUTH',
        { cause: err },
      );
    case GRPC.NOT_FOUND:
      return namespaceMissing(at, namespace, err);
    default:
      return undefined;
  }
}

function namespaceMissing(at: string, namespace: string, err: unknown): UserFacingError {
  return new UserFacingError(
    `${at} has no namespace "${namespace}"; check TEMPORAL_NAMESPACE or the profile's namespace`,
    'TEMPORAL_NAMESPACE',
    { cause: err },
  );
}

/**
 * Asks the server for the namespace: connecting checks only the frontend, and a missing namespace
 * would otherwise surface at the first call as a stack trace, or in a worker as a multi-line
 * transport error once it polls. @throws the call's error (see {@link connectFailure}).
 */
export async function checkNamespace(connection: Connection, namespace: string): Promise<void> {
  await connection.withDeadline(Date.now() + 10_000, () =>
    connection.workflowService.describeNamespace({ namespace }),
  );
}
