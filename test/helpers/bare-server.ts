// A bare node:http server on a loopback port, for the partners the demo partner cannot play (a
// Content-Length it never sends, a chain of redirects): `handler` decides every answer, and every
// request it got is kept, body included, for assertions on what reached it.
import assert from 'node:assert/strict';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';

/** A request as the server got it. */
export interface SeenRequest {
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface BareServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  server: Server;
  seen: SeenRequest[];
  close(): Promise<void>;
}

/** Starts a server whose `handler` answers each request once its body has been read. */
export async function bareServer(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<BareServer> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(typeof address === 'object' && address);
  return {
    url: `http://127.0.0.1:${address.port}`,
    server,
    seen,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Sends `body` as JSON with `status`. */
export function answerJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(bytes.length),
    ...headers,
  });
  res.end(bytes);
}
