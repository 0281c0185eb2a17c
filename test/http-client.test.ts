// The engine's HTTP client against hostile servers over real sockets: bodies larger than the cap
// (counted, or announced by Content-Length), the send deadline of non-idempotent calls, and what
// a refusal says (every Retry-After form, rate-limit headers, the partner's own words, scrubbed). The
// demo partner's ledger and store say what reached it; a bare node:http server plays the partners
// the demo partner cannot (a Content-Length it never sends, a huge answer to a POST).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import {
  createHttpClient,
  credentialValuesOf,
  DEFAULT_MAX_RESPONSE_BYTES,
  type HttpClient,
  MAX_ERROR_BODY_BYTES,
} from '../activities/http.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import { answerJson, bareServer } from './helpers/bare-server.ts';
import { waitFor } from './helpers/outbox.ts';

const MiB = 1024 * 1024;
const signal = new AbortController().signal;

function failureOf(err: unknown): { type: string; code: string; nonRetryable: boolean; message: string } {
  assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
  const code = (err.details?.[0] as { code: string }).code;
  return { type: err.type ?? '', code, nonRetryable: err.nonRetryable === true, message: err.message };
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
    const server = await bareServer((req, res) => {
      req.socket.once('close', () => (closed = true));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000000000' });
      res.flushHeaders();
    });
    try {
      const err = await http
        .getJson(new URL(server.url), { signal, what: 'partner records' })
        .catch((e: unknown) => e);
      assert.deepEqual(failureOf(err), {
        type: 'InvalidResponse',
        code: 'RESPONSE_TOO_LARGE',
        nonRetryable: true,
        message: `partner records: response body larger than ${MiB} bytes (Content-Length 1000000000)`,
      });
      await waitFor(() => closed, 'the client to close the connection');
    } finally {
      await server.close();
    }
  });

  void it('the cap holds for the answer to a POST too', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const server = await bareServer((_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      for (let i = 0; i < 32; i++) res.write(chunk);
      res.end();
    });
    try {
      const err = await http
        .postJson(new URL(server.url), { reference: 'r' }, { signal, what: 'partner submit' })
        .catch((e: unknown) => e);
      assert.equal(failureOf(err).code, 'RESPONSE_TOO_LARGE');
    } finally {
      await server.close();
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

  void it("a 429 without Retry-After waits what the partner's reset header says, as seconds or as an epoch second", async () => {
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
    // Without a reset header named, the built-in ones are read (its unit guessed from its size).
    partner.faults.clear();
    partner.faults.add({ kind: 'status', status: 429, rateLimitReset: 7, rateLimitResetStyle: 'seconds' });
    const plain = await http.getJson(records, { signal, what: 'partner records' }).catch((e: unknown) => e);
    assert.equal(
      ((plain as ApplicationFailure).details?.[0] as { retryAfterMs?: number }).retryAfterMs,
      7_000,
    );
    partner.faults.clear();
    partner.faults.add({ kind: 'status', status: 429, rateLimitReset: 7 });
    const epoch = await http.getJson(records, { signal, what: 'partner records' }).catch((e: unknown) => e);
    const epochGuess = ((epoch as ApplicationFailure).details?.[0] as { retryAfterMs?: number }).retryAfterMs;
    assert.ok(epochGuess !== undefined && epochGuess >= 6_000 && epochGuess <= 8_000, String(epochGuess));
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

  void it('readResponse hands over any status with its headers, the parsed body (undefined when empty or not JSON) and the URL', async () => {
    const server = await bareServer((req, res) => {
      if (req.url === '/json') return answerJson(res, 400, { message: 'no' }, { 'X-Partner': 'p' });
      if (req.url === '/html') {
        res.writeHead(502, { 'content-type': 'text/html' });
        return res.end('<html>bad gateway</html>');
      }
      if (req.url === '/empty') return void res.writeHead(204).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"cut": ');
    });
    try {
      const read = (path: string) =>
        http.readResponse(new URL(path, server.url), { signal, what: 'partner' });
      const json = await read('/json');
      assert.deepEqual(
        [json.status, json.body, json.headers['x-partner'], json.url.href],
        [400, { message: 'no' }, 'p', `${server.url}/json`],
      );
      assert.deepEqual([(await read('/html')).status, (await read('/html')).body], [502, undefined]);
      assert.deepEqual([(await read('/empty')).status, (await read('/empty')).body], [204, undefined]);
      assert.deepEqual([(await read('/cut')).status, (await read('/cut')).body], [200, undefined]);
      // readJson keeps refusing a 2xx that is not JSON.
      const err = await http
        .readJson(new URL('/cut', server.url), { signal, what: 'partner' })
        .catch((e: unknown) => e);
      assert.equal(failureOf(err).code, 'INVALID_JSON');
    } finally {
      await server.close();
    }
  });

  void it('Retry-After is honoured in every legal form: integer, fractional, each HTTP-date form; garbage and negatives are not', async () => {
    const server = await bareServer((req, res) => {
      const value = new URL(req.url ?? '/', 'http://x').searchParams.get('ra') ?? '';
      answerJson(res, 429, { message: 'slow down' }, { 'retry-after': value });
    });
    const in30 = new Date(Math.ceil(Date.now() / 1000) * 1000 + 30_000);
    const [weekday, day, month, year, time] = in30.toUTCString().split(' ') as [
      string,
      string,
      string,
      string,
      string,
    ];
    const longDay = {
      'Sun,': 'Sunday',
      'Mon,': 'Monday',
      'Tue,': 'Tuesday',
      'Wed,': 'Wednesday',
      'Thu,': 'Thursday',
      'Fri,': 'Friday',
      'Sat,': 'Saturday',
    }[weekday];
    const forms: [string, number | undefined, number?][] = [
      ['7', 7_000],
      ['2.0', 2_000],
      ['0.5', 500],
      [in30.toUTCString(), 30_000, 2_000],
      [`${longDay}, ${day}-${month}-${year.slice(2)} ${time} GMT`, 30_000, 2_000],
      [`${weekday.slice(0, 3)} ${month} ${day.replace(/^0/, ' ')} ${time} ${year}`, 30_000, 2_000],
      ['soon', undefined],
      ['-5', undefined],
    ];
    try {
      for (const [value, expected, slack = 0] of forms) {
        const url = new URL(`/?ra=${encodeURIComponent(value)}`, server.url);
        const err = await http.getJson(url, { signal, what: 'partner' }).catch((e: unknown) => e);
        assert.equal(failureOf(err).type, 'RateLimited', value);
        const wait = ((err as ApplicationFailure).details?.[0] as { retryAfterMs?: number }).retryAfterMs;
        if (expected === undefined) assert.equal(wait, undefined, value);
        else assert.ok(wait !== undefined && Math.abs(wait - expected) <= slack, `${value}: ${wait}`);
      }
    } finally {
      await server.close();
    }
  });

  void it("a 403 with x-ratelimit-remaining 0 is RateLimited until x-ratelimit-reset (GitHub's primary limit), not PermissionDenied", async () => {
    const server = await bareServer((_req, res) =>
      answerJson(
        res,
        403,
        {
          message: 'API rate limit exceeded for 203.0.113.7.',
          documentation_url: 'https://docs.github.com/rest',
        },
        {
          'x-ratelimit-limit': '60',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + 20),
        },
      ),
    );
    try {
      const err = await http
        .getJson(new URL(server.url), { signal, what: 'partner gh' })
        .catch((e: unknown) => e);
      const f = failureOf(err);
      assert.deepEqual([f.type, f.code, f.nonRetryable], ['RateLimited', 'HTTP_403', false]);
      const wait = ((err as ApplicationFailure).details?.[0] as { retryAfterMs?: number }).retryAfterMs;
      assert.ok(wait !== undefined && wait > 18_000 && wait <= 21_000, String(wait));
      assert.match(
        f.message,
        /^partner gh: rate limited \(403, x-ratelimit-remaining 0, retry after (19|20|21) s\): "API rate limit exceeded for \[ip\]\."$/,
      );
    } finally {
      await server.close();
    }
  });

  void it("a partner's error message reaches the failure, scrubbed: the credential sent, an email, a URL never do", async () => {
    const token = 'tok-0123456789-SECRET';
    const queryKey = 'qk-secret-77';
    const server = await bareServer((req, res) =>
      answerJson(res, 400, {
        error: {
          code: 'BadArgument',
          message:
            `Invalid value for $top. Request ${req.url ?? ''} with ${req.headers.authorization ?? ''} ` +
            `by ops@partner.example; docs https://partner.example/docs?key=${queryKey}. Secret ${token}!`,
        },
      }),
    );
    try {
      const url = new URL(`/items?$top=abc&api_key=${queryKey}`, server.url);
      const err = await http
        .readJson(url, { signal, what: 'partner acme', headers: { authorization: `Bearer ${token}` } })
        .catch((e: unknown) => e);
      const f = failureOf(err);
      assert.deepEqual([f.type, f.code], ['InvalidInput', 'HTTP_400']);
      assert.equal(
        f.message,
        'partner acme: rejected with status 400: "Invalid value for $top. Request /items?$top=abc&api_key=*** with Bearer *** by [email]; docs [url]. Secret ***!"',
      );
      for (const leak of [token, queryKey, 'ops@', 'partner.example'])
        assert.ok(!f.message.includes(leak), leak);
      // A POST's refusal carries the partner's words too.
      const posted = await http
        .postJson(url, { x: 1 }, { signal, what: 'partner submit', headers: { 'x-api-key': 'k-9f8e7d6c' } })
        .catch((e: unknown) => e);
      assert.match(
        failureOf(posted).message,
        /^partner submit: rejected with status 400: "Invalid value for \$top\./,
      );
    } finally {
      await server.close();
    }
  });

  void it('a non-2xx body is read up to 64 KiB for its words; a larger one is dropped, even one announced and never sent', async () => {
    const words = (n: number) => ({ message: 'quota exceeded', padding: 'x'.repeat(n) });
    const server = await bareServer((req, res) => {
      if (req.url === '/small') return answerJson(res, 500, words(MAX_ERROR_BODY_BYTES - 100));
      if (req.url === '/large') {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.write(JSON.stringify(words(MAX_ERROR_BODY_BYTES)).slice(0, -1));
        res.write(`,"more":"${'y'.repeat(1_000_000)}"}`);
        return res.end();
      }
      // Announces 1 GB and never sends a byte of it: only a client that believes the header returns.
      res.writeHead(503, { 'content-type': 'application/json', 'content-length': '1000000000' });
      res.flushHeaders();
    });
    try {
      const small = await http
        .getJson(new URL('/small', server.url), { signal, what: 'p' })
        .catch((e: unknown) => e);
      assert.equal(failureOf(small).message, 'p: upstream unavailable (500): "quota exceeded"');
      const large = await http.readResponse(new URL('/large', server.url), { signal, what: 'p' });
      assert.deepEqual([large.status, large.body], [500, undefined]);
      const err = await http
        .getJson(new URL('/large', server.url), { signal, what: 'p' })
        .catch((e: unknown) => e);
      assert.equal(failureOf(err).message, 'p: upstream unavailable (500)');
      const announced = await http.readResponse(new URL('/announced', server.url), { signal, what: 'p' });
      assert.deepEqual([announced.status, announced.body], [503, undefined]);
    } finally {
      await server.close();
    }
  });

  void it('credentialValuesOf lists every form the credential of a request takes, for masking', () => {
    const url = new URL('https://p.example/x?page=2&token=t-query&key=k-query');
    const basic = Buffer.from('user:pa55word').toString('base64');
    assert.deepEqual(
      credentialValuesOf(
        url,
        { Authorization: `Basic ${basic}`, Cookie: 'sid=s-1; theme=dark', 'X-Custom': 'c-1', Accept: 'a' },
        { headers: ['x-custom'], queryParam: 'key' },
      ),
      ['t-query', 'k-query', basic, 'user:pa55word', 'pa55word', 's-1', 'dark', 'c-1'],
    );
    assert.deepEqual(
      credentialValuesOf(new URL('https://p.example/'), {
        authorization: 'Bearer b-1',
        'x-api-key': 'two words',
      }),
      ['b-1', 'two words'],
    );
  });
});
