/**
 * A Temporal frontend that is not the suite's embedded dev server, the way a self-hosted cluster
 * or Temporal Cloud looks to a client: a second `temporal server start-dev` (its own ports, its
 * own namespace) behind a TLS frontend made here, with a throw-away CA and certificates made by
 * the `openssl` CLI. The dev server has no TLS options of its own, so the frontends terminate TLS
 * and forward plaintext HTTP/2 to its gRPC port:
 *
 * - `mtls`: a `tls.Server` that demands a client certificate of the CA and pipes each accepted
 *   socket to the dev server, the way mTLS to a self-hosted cluster is checked (in the handshake).
 * - `apiKey`: an HTTP/2 server (server TLS only) that forwards each gRPC stream and refuses one
 *   whose `authorization` is not `Bearer <key>` with UNAUTHENTICATED, the way Temporal Cloud
 *   checks API keys (per request: a TCP pipe cannot see the header).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { startDevServer } from '../../worker/stack/temporal-dev-server.ts';

const run = promisify(execFile);

/** Files of the throw-away PKI (paths; PEM). */
export interface Certificates {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  /** Signed by the CA. */
  clientCert: string;
  clientKey: string;
  /** Signed by another CA the frontend does not trust. */
  strangerCert: string;
  strangerKey: string;
}

/** Runs `openssl` in `dir` with `command` split on spaces (no argument here holds one). */
async function openssl(dir: string, command: string): Promise<void> {
  await run('openssl', command.split(' '), { cwd: dir });
}

const EC_KEY = '-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';

/** A key and a certificate for `subject`, signed by `ca` (or self-signed as a CA when `ca` is absent). */
async function issue(
  dir: string,
  name: string,
  subject: string,
  ca: { cert: string; key: string } | undefined,
  extensions = '',
): Promise<void> {
  if (!ca) {
    // Stated, not left to openssl.cnf: the worker's native connection (rustls) takes an issuer
    // only with CA:TRUE.
    const caExtensions =
      '-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign';
    await openssl(
      dir,
      `req -x509 ${EC_KEY} -keyout ${name}.key -out ${name}.pem -days 2 -subj ${subject} ${caExtensions}`,
    );
    return;
  }
  await writeFile(path.join(dir, `${name}.ext`), extensions);
  await openssl(dir, `req ${EC_KEY} -keyout ${name}.key -out ${name}.csr -subj ${subject}`);
  await openssl(
    dir,
    // A serial of its own: certificates of one CA are issued at once, and a shared serial file races.
    `x509 -req -in ${name}.csr -CA ${ca.cert} -CAkey ${ca.key} -set_serial 0x${randomBytes(8).toString('hex')} ` +
      `-out ${name}.pem -days 2 -extfile ${name}.ext`,
  );
}

/** Makes the CA, the server's certificate (127.0.0.1, localhost) and two client certificates. */
export async function makeCertificates(dir: string): Promise<Certificates> {
  const client =
    'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n';
  const server = client.replace('clientAuth', 'serverAuth') + 'subjectAltName=IP:127.0.0.1,DNS:localhost\n';
  await Promise.all([
    issue(dir, 'ca', '/CN=durable-fetch-test-CA', undefined),
    issue(dir, 'other-ca', '/CN=other-CA', undefined),
  ]);
  const ca = { cert: 'ca.pem', key: 'ca.key' };
  const otherCa = { cert: 'other-ca.pem', key: 'other-ca.key' };
  await Promise.all([
    issue(dir, 'server', '/CN=localhost', ca, server),
    issue(dir, 'client', '/CN=durable-fetch-worker', ca, client),
    // The same subject as the good one: only its issuer differs.
    issue(dir, 'stranger', '/CN=durable-fetch-worker', otherCa, client),
  ]);
  const at = (file: string) => path.join(dir, file);
  return {
    dir,
    caCert: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
    strangerCert: at('stranger.pem'),
    strangerKey: at('stranger.key'),
  };
}

interface Frontend {
  address: string;
  close(): Promise<void>;
}

async function listen(server: net.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/** mTLS in the handshake, then the bytes of each connection piped both ways to `target`. */
async function startMtlsFrontend(target: string, certs: Certificates): Promise<Frontend> {
  const [host, port] = target.split(':') as [string, string];
  const sockets = new Set<tls.TLSSocket>();
  const server = tls.createServer(
    {
      key: await readFile(certs.serverKey),
      cert: await readFile(certs.serverCert),
      ca: await readFile(certs.caCert),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (socket) => {
      const upstream = net.connect(Number(port), host);
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    },
  );
  // A refused handshake is what the tests provoke; the client sees it, the frontend need not.
  server.on('tlsClientError', () => {});
  const address = await listen(server);
  return {
    address,
    close: async () => {
      // Open connections (a killed worker's) would otherwise keep the server up.
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Server TLS, then each gRPC stream forwarded to `target` when it carries `Bearer <apiKey>`. */
async function startApiKeyFrontend(target: string, certs: Certificates, apiKey: string): Promise<Frontend> {
  // One session to the dev server, opened again once it has ended (the server ends idle ones).
  let session: http2.ClientHttp2Session | undefined;
  const upstream = () => {
    if (!session || session.closed || session.destroyed) {
      const opened = http2.connect(`http://${target}`);
      const forget = () => {
        if (session === opened) session = undefined;
      };
      opened.on('error', () => {});
      opened.on('goaway', forget);
      opened.on('close', forget);
      session = opened;
    }
    return session;
  };
  const server = http2.createSecureServer({
    key: await readFile(certs.serverKey),
    cert: await readFile(certs.serverCert),
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    if (headers.authorization !== `Bearer ${apiKey}`) {
      // Trailers-only: how a gRPC server refuses a call before it runs.
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': '16',
          'grpc-message': 'invalid API key',
        },
        { endStream: true },
      );
      return;
    }
    const call = upstream().request(
      Object.fromEntries(
        Object.entries(headers).filter(([name]) => name !== ':scheme' && name !== ':authority'),
      ),
    );
    call.on('error', () => {});
    let trailers: http2.OutgoingHttpHeaders = {};
    call.on('response', (response) => {
      // grpc-status in the headers makes them trailers-only: nothing follows.
      if (response['grpc-status'] !== undefined) stream.respond(response, { endStream: true });
      else stream.respond(response, { waitForTrailers: true });
    });
    call.on('trailers', (received: http2.IncomingHttpHeaders) => {
      trailers = received;
    });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    call.on('data', (chunk: Buffer) => stream.write(chunk));
    call.on('end', () => {
      if (!stream.writableEnded) stream.end();
    });
    stream.on('data', (chunk: Buffer) => call.write(chunk));
    stream.on('end', () => call.end());
    // Either side reset (a deadline, a cancel, a stopped worker, a dev server gone): so is the
    // other. An upstream call that ended normally closes before its trailers are sent on.
    stream.on('close', () => call.close(http2.constants.NGHTTP2_CANCEL));
    call.on('close', () => {
      if (call.rstCode !== http2.constants.NGHTTP2_NO_ERROR) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
  });
  const address = await listen(server);
  return {
    address,
    close: async () => {
      session?.close();
      // Open client sessions (a killed worker's) would otherwise keep the server up.
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The second server of {@link startSecureTemporal}: addresses, namespace and the PKI's files. */
export interface SecureTemporal {
  /** mTLS frontend: a client certificate of `certs.caCert` required. */
  mtlsAddress: string;
  /** API key frontend: server TLS (`certs.caCert`) and `Bearer <apiKey>` on every call. */
  apiKeyAddress: string;
  apiKey: string;
  /** The only namespace our processes use there (the dev server has `default` too). */
  namespace: string;
  /** The dev server itself (plaintext), for the test's own look at what happened there. */
  plainAddress: string;
  certs: Certificates;
  stop(): Promise<void>;
}

/**
 * Starts a second dev server (headless, in memory, free port, namespace `namespace` with
 * durable-fetch's search attributes) and both frontends in front of it. `stop()` ends all of it and
 * removes the certificates.
 */
export async function startSecureTemporal(options: {
  cliPath: string;
  namespace: string;
}): Promise<SecureTemporal> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'df-test-tls-'));
  const stops: (() => Promise<void>)[] = [() => rm(dir, { recursive: true, force: true })];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn();
  };
  try {
    const [certs, server] = await Promise.all([
      makeCertificates(dir),
      startDevServer({
        cliPath: options.cliPath,
        port: 0,
        headless: true,
        namespace: options.namespace,
      }).then((s) => {
        stops.push(() => s.stop());
        return s;
      }),
    ]);
    const apiKey = `df-test-${randomBytes(16).toString('hex')}`;
    const [mtls, keyed] = await Promise.all([
      startMtlsFrontend(server.address, certs),
      startApiKeyFrontend(server.address, certs, apiKey),
    ]);
    stops.push(
      () => mtls.close(),
      () => keyed.close(),
    );
    return {
      mtlsAddress: mtls.address,
      apiKeyAddress: keyed.address,
      apiKey,
      namespace: options.namespace,
      plainAddress: server.address,
      certs,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
