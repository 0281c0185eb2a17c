// Redirects as the HTTP client follows them, over real sockets: two bare servers on loopback ports
// are two origins, and each keeps the requests it got, so a test sees exactly which credential
// reached which server, with which method and body.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { createHttpClient, type HttpClient, type ReadOptions, type Redirects } from '../activities/http.ts';
import { answerJson, type BareServer, bareServer } from './helpers/bare-server.ts';

const signal = new AbortController().signal;
const TOKEN = 'tok-redirect-0123456789';
const QUERY_KEY = 'qk-4242';
const credential = { headers: ['x-partner-token'], queryParam: 'api_key' };
const sameOrigin: Redirects = { follow: 'same_origin', maxHops: 5, credential };
const anyOrigin: Redirects = { follow: 'any_origin', maxHops: 5, credential };
/** Every kind of credential header, and two that are not credentials. */
const headers = {
  authorization: `Bearer ${TOKEN}`,
  'x-api-key': 'k-1',
  cookie: 'sid=s-1',
  'x-partner-token': 'p-1',
  accept: 'application/json',
  'x-trace': 't-1',
};

function failureOf(err: unknown): { type: string; code: string; message: string } {
  assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
  return { type: err.type ?? '', code: (err.details?.[0] as { code: string }).code, message: err.message };
}

/** Answers `/json` with the path it was asked; any path listed in `routes` with a redirect there. */
function redirecting(routes: () => Record<string, [number, string]>) {
  return (req: { url?: string | undefined }, res: Parameters<typeof answerJson>[0]) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const hop = routes()[path];
    if (hop) {
      res.writeHead(hop[0], { location: hop[1], 'content-type': 'text/html' });
      return res.end('<a>moved</a>');
    }
    answerJson(res, 200, { path });
  };
}

void describe('http redirects', () => {
  let http: HttpClient;
  let a: BareServer;
  let b: BareServer;
  let routesA: Record<string, [number, string]> = {};
  let routesB: Record<string, [number, string]> = {};
  before(async () => {
    http = createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 10_000 });
    a = await bareServer(redirecting(() => routesA));
    b = await bareServer(redirecting(() => routesB));
  });
  afterEach(() => {
    a.seen.length = 0;
    b.seen.length = 0;
    routesA = {};
    routesB = {};
  });
  after(async () => {
    await http.close();
    await a.close();
    await b.close();
  });

  const read = (path: string, opts: Partial<ReadOptions> = {}) =>
    http.readJson(new URL(path, a.url), { signal, what: 'partner acme', headers, ...opts });

  void it('without the option a redirect is the response: readResponse returns it, readJson refuses it as today', async () => {
    routesA = { '/start': [302, '/json'] };
    const res = await http.readResponse(new URL('/start', a.url), { signal, what: 'partner acme' });
    assert.deepEqual([res.status, res.headers.location, res.url.pathname], [302, '/json', '/start']);
    const err = await read('/start').catch((e: unknown) => e);
    assert.deepEqual(failureOf(err), {
      type: 'InvalidInput',
      code: 'HTTP_302',
      message: 'partner acme: rejected with status 302',
    });
    assert.deepEqual(
      a.seen.map((r) => r.url),
      ['/start', '/start'],
    );
  });

  void it('same origin: followed with every credential, the query credential added again when the Location lacks it', async () => {
    routesA = { '/start': [301, '/moved?page=2'], '/moved': [308, `${a.url}/json?page=2`] };
    const res = await read(`/start?api_key=${QUERY_KEY}`, { redirects: sameOrigin });
    assert.deepEqual(res.body, { path: '/json' });
    assert.equal(res.url.href, `${a.url}/json?page=2&api_key=${QUERY_KEY}`);
    assert.deepEqual(
      a.seen.map((r) => r.url),
      [
        `/start?api_key=${QUERY_KEY}`,
        `/moved?page=2&api_key=${QUERY_KEY}`,
        `/json?page=2&api_key=${QUERY_KEY}`,
      ],
    );
    for (const r of a.seen) {
      assert.equal(r.headers.authorization, `Bearer ${TOKEN}`);
      assert.deepEqual(
        [r.headers['x-api-key'], r.headers.cookie, r.headers['x-partner-token'], r.headers['x-trace']],
        ['k-1', 'sid=s-1', 'p-1', 't-1'],
      );
    }
  });

  void it('another origin, allowed: followed without any credential header or the query credential, also on the way back', async () => {
    routesA = { '/start': [302, `${b.url}/hop?api_key=${QUERY_KEY}&page=2`], '/back': [302, '/json'] };
    routesB = { '/hop': [307, `${a.url}/back`] };
    const res = await read(`/start?api_key=${QUERY_KEY}`, { redirects: anyOrigin });
    assert.deepEqual(res.body, { path: '/json' });
    assert.equal(res.url.href, `${a.url}/json`);
    assert.deepEqual(
      b.seen.map((r) => r.url),
      ['/hop?page=2'],
      'the echoed query credential is taken out',
    );
    const [atB] = b.seen;
    for (const name of ['authorization', 'x-api-key', 'cookie', 'x-partner-token'])
      assert.equal(atB?.headers[name], undefined, `${name} reached the other origin`);
    assert.deepEqual([atB?.headers.accept, atB?.headers['x-trace']], ['application/json', 't-1']);
    assert.ok(!JSON.stringify(b.seen).includes(TOKEN));
    // Back on the first origin after another: the credential is not sent again.
    assert.deepEqual(
      a.seen.map((r) => [r.url, r.headers.authorization]),
      [
        [`/start?api_key=${QUERY_KEY}`, `Bearer ${TOKEN}`],
        ['/back', undefined],
        ['/json', undefined],
      ],
    );
  });

  void it('another origin, not allowed: OFF_ORIGIN_REDIRECT, without the URL in the message, and the other origin never asked', async () => {
    routesA = { '/start': [302, `${b.url}/json?sig=s3cret`] };
    const err = await read('/start', { redirects: sameOrigin }).catch((e: unknown) => e);
    const f = failureOf(err);
    assert.deepEqual([f.type, f.code], ['InvalidResponse', 'OFF_ORIGIN_REDIRECT']);
    assert.equal(
      f.message,
      'partner acme: a 302 redirect to another origin, not followed (redirects to the same origin only)',
    );
    assert.equal(b.seen.length, 0);
    // The same host on another port, or `localhost` for 127.0.0.1, is another origin too.
    routesA = { '/start': [302, a.url.replace('127.0.0.1', 'localhost') + '/json'] };
    assert.equal(
      failureOf(await read('/start', { redirects: sameOrigin }).catch((e: unknown) => e)).code,
      'OFF_ORIGIN_REDIRECT',
    );
  });

  void it('at most maxHops redirects are followed: one more is TOO_MANY_REDIRECTS', async () => {
    routesA = Object.fromEntries(
      Array.from({ length: 10 }, (_, i) => [`/hop/${i}`, [302, `/hop/${i + 1}`] as [number, string]]),
    );
    const err = await read('/hop/0', { redirects: { ...sameOrigin, maxHops: 3 } }).catch((e: unknown) => e);
    assert.deepEqual(failureOf(err), {
      type: 'InvalidResponse',
      code: 'TOO_MANY_REDIRECTS',
      message: 'partner acme: more than 3 redirect(s) in one request',
    });
    assert.deepEqual(
      a.seen.map((r) => r.url),
      ['/hop/0', '/hop/1', '/hop/2', '/hop/3'],
    );
    a.seen.length = 0;
    routesA = { '/hop/0': [302, '/hop/1'], '/hop/1': [302, '/hop/2'], '/hop/2': [302, '/json'] };
    assert.deepEqual((await read('/hop/0', { redirects: { ...sameOrigin, maxHops: 3 } })).body, {
      path: '/json',
    });
  });

  void it('a redirect back to a URL already requested is REDIRECT_LOOP, the query credential and parameter order aside', async () => {
    routesA = { '/a': [302, '/b'], '/b': [302, '/a?page=1&x=2'] };
    const err = await read(`/a?x=2&api_key=${QUERY_KEY}&page=1`, { redirects: sameOrigin }).catch(
      (e: unknown) => e,
    );
    assert.deepEqual(failureOf(err), {
      type: 'InvalidResponse',
      code: 'REDIRECT_LOOP',
      message: 'partner acme: redirected back to a URL already requested',
    });
    assert.deepEqual(
      a.seen.map((r) => new URL(r.url, 'http://x').pathname),
      ['/a', '/b'],
    );
  });

  void it('303 turns any request into a GET without body; 307 and 308 keep method and body; 301 and 302 turn a POST into a GET', async () => {
    const post = { method: 'POST' as const, body: { q: 'find' }, redirects: sameOrigin };
    const cases: [number, string, string][] = [
      [303, 'GET', ''],
      [307, 'POST', '{"q":"find"}'],
      [308, 'POST', '{"q":"find"}'],
      [301, 'GET', ''],
      [302, 'GET', ''],
    ];
    for (const [status, method, body] of cases) {
      a.seen.length = 0;
      routesA = { '/search': [status, '/json'] };
      assert.deepEqual((await read('/search', post)).body, { path: '/json' });
      const [first, second] = a.seen;
      assert.deepEqual([first?.method, first?.body], ['POST', '{"q":"find"}']);
      assert.deepEqual([second?.method, second?.body], [method, body], String(status));
      assert.equal(
        second?.headers['content-type'],
        body === '' ? undefined : 'application/json',
        String(status),
      );
      assert.equal(second?.headers.authorization, `Bearer ${TOKEN}`);
    }
    // A GET stays a GET whatever the status.
    a.seen.length = 0;
    routesA = { '/list': [307, '/json'] };
    await read('/list', { redirects: sameOrigin });
    assert.deepEqual(
      a.seen.map((r) => r.method),
      ['GET', 'GET'],
    );
  });

  void it('a Location that is no http(s) URL is INVALID_REDIRECT; a 3xx without Location is the response', async () => {
    routesA = { '/file': [302, 'file:///etc/passwd'], '/bad': [302, 'http://[::1'] };
    for (const path of ['/file', '/bad']) {
      const err = await read(path, { redirects: anyOrigin }).catch((e: unknown) => e);
      assert.deepEqual(
        [failureOf(err).type, failureOf(err).code],
        ['InvalidResponse', 'INVALID_REDIRECT'],
        path,
      );
      assert.ok(!failureOf(err).message.includes('passwd'));
    }
    const bare = await bareServer((_req, res) => void res.writeHead(304).end());
    try {
      const res = await http.readResponse(new URL(bare.url), { signal, what: 'p', redirects: anyOrigin });
      assert.equal(res.status, 304);
    } finally {
      await bare.close();
    }
  });
});
