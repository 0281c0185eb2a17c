// The engine's HTTP client against hostile servers over real sockets: bodies larger than the cap
// (counted, or announced by Content-Length) and the send deadline of non-idempotent calls. The
// demo partner's ledger and store say what reached it; a bare node:http server plays the partners
// the demo partner cannot (a Content-Length it never sends, a huge answer to a POST).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { createHttpClient, DEFAULT_MAX_RESPONSE_BYTES, type HttpClient } from '../activities/http.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import { waitFor } from './helpers/outbox.ts';

const MiB = 1024 * 1024;
const signal = new AbortController().signal;

function failureOf(err: unknown): { type: string; code: string; nonRetryable: boolean; message: string } {
  assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
  const code = (err.details?.[0] as { code: string }).code;
  return { type: err.type ?? '', code, nonRetryable: err.nonRetryable === true, message: err.message };
}

/** A bare server on a loopback port; `handler` decides what it answers. */
async function bareServer(
  handler: Parameters<typeof createServer>[1],
): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(typeof address === 'object' && address);
  return { url: `http://127.0.0.1:${address.port}`, server };
}

function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

void describe('http client', () => {
  let partner: PartnerServer;
  let http: HttpClient;
  let records: URL;
  before(async () => {
    partner = await startPartner({ port: 0 });
    // A response timeout far beyond the test: a read that waits on the body would show as a hang.
    http = createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 60_000, maxResponseBytes: MiB });
    records = new URL(`${partner.url}/sources/http-client/records?date=2026-05-01`);
  });
  beforeEach(() => {
    partner.faults.clear();
    partner.ledger.clear();
    partner.submissions.clear();
  });
  after(async () => {
    await http.close();
    await partner.close();
  });

  void it('a body growing past the cap fails as InvalidResponse RESPONSE_TOO_LARGE and the client stops reading', async () => {
    partner.faults.add({ kind: 'oversize', bytes: 50_000_000 });
    const err = await http.getJson(records, { signal, what: 'partner records' }).catch((e: unknown) => e);
    assert.deepEqual(failureOf(err), {
      type: 'InvalidResponse',
      code: 'RESPONSE_TOO_LARGE',
      nonRetryable: true,
      message: `partner records: response body larger than ${MiB} bytes`,
    });
    await waitFor(() => partner.ledger.count({ fault: 'oversize' }) > 0, 'the oversize entry');
    const [entry] = partner.ledger.entries({ fault: 'oversize' });
    assert.equal(entry?.bodyBytes, 50_000_000);
    assert.ok((entry?.bytesSent ?? Infinity) < 50_000_000, `the partner sent ${entry?.bytesSent} bytes`);
    const page = (await http.getJson(records, { signal, what: 'partner records' })) as { records: unknown[] };
    assert.equal(page.records.length, 50, 'the next call works on a fresh connection');
  });

  void it('a body under the cap is read whole; the default cap is 16 MiB', async () => {
    assert.equal(DEFAULT_MAX_RESPONSE_BYTES, 16 * MiB);
    const roomy = createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 60_000 });
    try {
      partner.faults.add({ kind: 'oversize', bytes: 3_000_000 });
      const page = (await roomy.getJson(records, { signal, what: 'partner records' })) as {
        records: { padding: string }[];
      };
      assert.equal(page.records.length, 50);
      partner.faults.add({ kind: 'oversize', bytes: 16 * MiB + 1, contentLength: true });
      const err = await roomy.getJson(records, { signal, what: 'partner records' }).catch((e: unknown) => e);
      assert.equal(failureOf(err).code, 'RESPONSE_TOO_LARGE');
    } finally {
      await roomy.close();
    }
  });

  void it('a Content-Length over the cap is refused before any of the body is read', async () => {
    // Announces 1 GB and never sends a byte of it: only a client that believes the header returns.
    let closed = false;
    const { url, server } = await bareServer((req, res) => {
      req.socket.once('close', () => (closed = true));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000000000' });
      res.flushHeaders();
    });
    try {
      const err = await http
        .getJson(new URL(url), { signal, what: 'partner records' })
        .catch((e: unknown) => e);
      assert.deepEqual(failureOf(err), {
        type: 'InvalidResponse',
        code: 'RESPONSE_TOO_LARGE',
        nonRetryable: true,
        message: `partner records: response body larger than ${MiB} bytes (Content-Length 1000000000)`,
      });
      await waitFor(() => closed, 'the client to close the connection');
    } finally {
      await stop(server);
    }
  });

  void it('the cap holds for the answer to a POST too', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const { url, server } = await bareServer((_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      for (let i = 0; i < 32; i++) res.write(chunk);
      res.end();
    });
    try {
      const err = await http
        .postJson(new URL(url), { reference: 'r' }, { signal, what: 'partner submit' })
        .catch((e: unknown) => e);
      assert.equal(failureOf(err).code, 'RESPONSE_TOO_LARGE');
    } finally {
      await stop(server);
    }
  });

  void it('a POST whose send deadline has passed is never sent: nothing reaches the partner', async () => {
    const submissions = new URL(`${partner.url}/submissions`);
    const post = (sendBy: number) =>
      http
        .postJson(submissions, { reference: 'send-by' }, { signal, what: 'partner submit', sendBy })
        .catch((e: unknown) => e);
    const refused = failureOf(await post(performance.now() - 1));
    assert.deepEqual(refused, {
      type: 'Timeout',
      code: 'SEND_DEADLINE_PASSED',
      nonRetryable: false,
      message: 'partner submit: not sent, its send deadline passed',
    });
    assert.equal(partner.ledger.count(), 0, 'no request at all');

    const sent = (await post(performance.now() + 60_000)) as { id: string; reference: string };
    assert.equal(sent.reference, 'send-by');
    // Now a kept-alive connection is ready: the deadline still stops the request before writing.
    assert.equal(failureOf(await post(performance.now() - 1)).code, 'SEND_DEADLINE_PASSED');
    assert.deepEqual(
      partner.submissions.list().map((s) => s.id),
      [sent.id],
    );
    assert.deepEqual(
      partner.ledger.entries().map((e) => [e.action, e.status]),
      [['submit', 201]],
    );
  });

  void it("a 429 without Retry-After waits what the partner's named reset header says, as seconds or as an epoch second", async () => {
    const waitOf = async (fault: Record<string, unknown>, unit: 'seconds' | 'epoch') => {
      partner.faults.clear();
      partner.faults.add({ kind: 'status', status: 429, ...fault });
      const err = await http
        .readJson(records, {
          signal,
          what: 'partner records',
          rateLimitReset: { header: 'X-RateLimit-Reset', unit },
        })
        .catch((e: unknown) => e);
      assert.equal(failureOf(err).type, 'RateLimited');
      return ((err as ApplicationFailure).details?.[0] as { retryAfterMs?: number }).retryAfterMs;
    };
    assert.equal(await waitOf({ rateLimitReset: 7, rateLimitResetStyle: 'seconds' }, 'seconds'), 7_000);
    const epochWait = await waitOf({ rateLimitReset: 7 }, 'epoch');
    assert.ok(epochWait !== undefined && epochWait >= 6_000 && epochWait <= 8_000, String(epochWait));
    // Retry-After, when sent, is the partner's word and wins.
    assert.equal(
      await waitOf({ retryAfter: '2', rateLimitReset: 7, rateLimitResetStyle: 'seconds' }, 'seconds'),
      2_000,
    );
    // Without a reset header named, the reset header means nothing.
    partner.faults.clear();
    partner.faults.add({ kind: 'status', status: 429, rateLimitReset: 7, rateLimitResetStyle: 'seconds' });
    const plain = await http.getJson(records, { signal, what: 'partner records' }).catch((e: unknown) => e);
    assert.equal(
      ((plain as ApplicationFailure).details?.[0] as { retryAfterMs?: number }).retryAfterMs,
      undefined,
    );
  });

  void it("a per-call body cap below the client's refuses a larger body, and readJson hands over the headers", async () => {
    partner.faults.add({ kind: 'oversize', bytes: 200_000 });
    const err = await http
      .readJson(records, { signal, what: 'partner records', maxResponseBytes: 50_000 })
      .catch((e: unknown) => e);
    assert.equal(failureOf(err).code, 'RESPONSE_TOO_LARGE');
    const ok = await http.readJson(records, { signal, what: 'partner records' });
    assert.match(String(ok.headers['content-type']), /application\/json/);
    assert.ok(Array.isArray((ok.body as { records: unknown[] }).records));
  });
});
