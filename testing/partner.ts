/**
 * A partner API a job's test controls: a real HTTP server on 127.0.0.1 whose routes the test
 * writes, and the list of every request it received (the partner's own record of what the job
 * did: judge a run by it, not by what the run reports).
 *
 *   const partner = await testPartner({
 *     'GET /shipments': (req) => ({ body: { data: [...], next: null } }),
 *     'POST /notifications': (req) => ({ status: 201, body: { id: 'n-1' } }),
 *   });
 *   … partner.url, partner.requests …
 *   await partner.close();
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the partner received. Header names are lower-case. */
export interface PartnerRequest {
  method: string;
  /** The path without the query string. */
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
  /** The body parsed as JSON when it is JSON, else its text ('' when empty). */
  body: unknown;
}

/** A route's answer: status (default 200), headers, and a body sent as JSON unless a string. */
export interface PartnerReply {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** Routes by `'<METHOD> <path>'`; a route may answer differently each time (count its calls). */
export type PartnerRoutes = Record<string, (req: PartnerRequest) => PartnerReply | Promise<PartnerReply>>;

export interface TestPartner {
  /** `http://127.0.0.1:<port>`: the source's base URL. */
  url: string;
  /** Every request received, in order (including those no route answered: 404). */
  requests: PartnerRequest[];
  /** Closes the server and its open connections. */
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return '';
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Starts a partner on a free port of 127.0.0.1 with `routes`; unknown routes answer 404. */
export async function testPartner(routes: PartnerRoutes): Promise<TestPartner> {
  const requests: PartnerRequest[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://partner.test');
      const request: PartnerRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: await readBody(req),
      };
      requests.push(request);
      const route = routes[`${request.method} ${request.path}`];
      const reply: PartnerReply = route
        ? await route(request)
        : { status: 404, body: { error: `no route ${request.method} ${request.path}` } };
      const body = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
      res.end(body);
    })().catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(err) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
