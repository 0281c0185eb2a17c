// Scrubbing text a partner wrote before it is kept or shown (R11): what is masked, and what a
// reader still gets to see.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactFreeText, secretQueryValues } from '../runtime/redact.ts';

void describe('redactFreeText', () => {
  void it('masks credentials after an auth scheme, JWTs, secret-named assignments and long keys', () => {
    const jwt =
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
    const cases: [string, string][] = [
      ['Bearer abc.def-ghi is not valid', 'Bearer *** is not valid'],
      ['Authorization: Basic dXNlcjpwYXNzd29yZA== refused', 'Authorization: Basic *** refused'],
      ['Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b expired', 'Token *** expired'],
      [`session ${jwt} expired`, 'session *** expired'],
      ['password=hunter2&page=2', 'password=***&page=2'],
      ['client_secret = s3cr3t, grant refused', 'client_secret = ***, grant refused'],
      ['{"api_key": "k-123", "page": 2}', '{"api_key": "***", "page": 2}'],
      ['key ghp_16C7e42F292c6912E7710c838347Ae178B4a revoked', 'key *** revoked'],
      ['request 550e8400-e29b-41d4-a716-446655440000 failed', 'request *** failed'],
    ];
    for (const [text, expected] of cases) assert.equal(redactFreeText(text), expected, text);
  });

  void it('replaces URLs, email addresses and IP addresses, which may carry secrets or name a person', () => {
    assert.equal(
      redactFreeText('see https://u:p@partner.example/help?token=t#x or ftp://files.example/a'),
      'see [url] or [url]',
    );
    assert.equal(redactFreeText('user Jane.Doe+list@mail.example.co.uk is locked'), 'user [email] is locked');
    assert.equal(
      redactFreeText('limit exceeded for 203.0.113.7 and 2001:db8::1 (also ::ffff:192.0.2.1)'),
      'limit exceeded for [ip] and [ip] (also ::ffff:[ip])',
    );
  });

  void it('masks the exact values it is given, also URL-encoded, longest first; values under 4 characters are left', () => {
    assert.equal(
      redactFreeText('k=a+b/c and a%2Bb%2Fc and xy and abc-and-more', ['a+b/c', 'xy', 'abc', 'abc-and-more']),
      'k=*** and *** and xy and ***',
    );
  });

  void it('turns control and invisible characters into spaces and collapses whitespace; English stays readable', () => {
    assert.equal(redactFreeText('line 1\r\nline 2\u0007\u202eevil\u200b\tend  '), 'line 1 line 2 evil end');
    const prose =
      'The Basic plan has no access; your token expired at 2026-11-29T10:00:00Z. Invalid value for $top (max 100), page[size] too big.';
    assert.equal(redactFreeText(prose), prose);
    assert.equal(redactFreeText('std::string and a :: b at 12:30:45'), 'std::string and a :: b at 12:30:45');
  });

  void it('secretQueryValues lists the values of secret-named query parameters', () => {
    assert.deepEqual(secretQueryValues(new URL('https://p.example/x?page=2&API_KEY=k1&token=t2&token=')), [
      'k1',
      't2',
    ]);
  });
});
