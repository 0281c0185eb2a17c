// `durable-fetch credentials set|list|show` as an operator runs them (issue 38): the refresh token
// goes in on stdin, is sealed at once, and appears in no output, audit entry or row in clear; a
// missing credentials key or a bad value is one clear refusal that writes nothing; setting a
// credential that needed reauthorization makes it active again.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { findCredential } from '../db/credentials/credentials.ts';
import { openValue, parseMasterKey } from '../runtime/credential-cipher.ts';
import { type CliResult, fieldsOf } from './helpers/cli.ts';
import { credentialsCli } from './helpers/credentials-cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { temporalAddress } from './helpers/temporal.ts';

const KEY_TEXT = randomBytes(32).toString('base64');
const TOKEN = `rt-${randomBytes(12).toString('hex')}`;

let db: TestDatabase;

/** `durable-fetch <args>` with `stdin` written to it, like `… < file`. */
const cli = (args: string[], stdin: string, env: Record<string, string> = {}): Promise<CliResult> =>
  credentialsCli(db.url, args, stdin, env);

const SET = [
  'credentials',
  'set',
  'crm',
  '--grant',
  'refresh_token',
  '--token-url',
  'https://login.example/oauth/token',
  '--client-id',
  'durable-fetch',
  '--client-secret-ref',
  'DF_SECRET_CRM_CLIENT',
  '--scope',
  'contacts.read',
  '--reason',
  'new CRM app',
];

void describe('credentials CLI', () => {
  before(async () => {
    db = await useTestDatabase();
  });
  after(async () => {
    await db?.drop();
  });

  it('credentials set: the token from stdin is sealed, and no output or audit entry holds it', async () => {
    const set = await cli(SET, `${TOKEN}\n`, { DF_SECRET_CREDENTIALS_KEY: KEY_TEXT });
    assert.equal(set.code, 0, set.stderr);
    const row = await findCredential(db.prisma, 'crm');
    assert.ok(row?.refreshToken);
    assert.ok(!Buffer.from(row.refreshToken).toString('latin1').includes(TOKEN), 'sealed, not in clear');
    assert.equal(openValue(parseMasterKey(KEY_TEXT), 'crm', 'refresh_token', row.refreshToken), TOKEN);
    const audit = await db.prisma.auditEntry.findMany({
      where: { targetType: 'credential', targetId: 'crm' },
    });
    assert.deepEqual(
      audit.map((a) => [a.action, a.reason]),
      [['credential.set', 'new CRM app']],
    );
    const list = await cli(['credentials', 'list'], '');
    const show = await cli(['credentials', 'show', 'crm', '--json'], '');
    for (const out of [set, list, show])
      assert.ok(!`${out.stdout}${out.stderr}${JSON.stringify(audit.map((a) => a.details))}`.includes(TOKEN));
    assert.match(list.stdout, /crm\s+active\s+refresh_token\s+durable-fetch/);
    const shown = fieldsOf((await cli(['credentials', 'show', 'crm'], '')).stdout);
    assert.equal(shown.get('refresh token'), 'stored (sealed)');
    assert.equal(shown.get('client'), 'durable-fetch (basic, secret DF_SECRET_CRM_CLIENT)');
  });

  it('credentials set: without the credentials key, or with bad values, one refusal and nothing written', async () => {
    const noKey = await cli([...SET.slice(0, 2), 'other', ...SET.slice(3)], TOKEN);
    assert.equal(noKey.code, 1);
    assert.match(
      noKey.stderr,
      /the credentials key \(DF_SECRET_CREDENTIALS_KEY\) must be 32 random bytes in base64/,
    );
    const bad = await cli(
      [
        'credentials',
        'set',
        'Bad Id',
        '--grant',
        'refresh_token',
        '--token-url',
        'ftp://x',
        '--client-id',
        'c',
      ],
      '',
      { DF_SECRET_CREDENTIALS_KEY: KEY_TEXT },
    );
    assert.notEqual(bad.code, 0);
    const refused = await cli(
      [
        ...SET.slice(0, 2),
        'bad',
        ...SET.slice(3, 9),
        '--client-secret-ref',
        'the-secret',
        '--reason',
        'x',
        '--token-url',
        'ftp://x',
      ],
      '',
      { DF_SECRET_CREDENTIALS_KEY: KEY_TEXT },
    );
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /--client-secret-ref: the name of a DF_SECRET_\* variable/);
    assert.match(refused.stderr, /needs its refresh token on stdin/);
    assert.match(refused.stderr, /--token-url: http\(s\) only/);
    assert.equal(await db.prisma.credential.count({ where: { id: { in: ['other', 'bad'] } } }), 0);
  });

  it('credentials set: a credential that needed reauthorization is active again', async () => {
    await db.prisma.credential.update({
      where: { id: 'crm' },
      data: {
        status: 'needs_reauthorization',
        statusReason: 'the provider refused the refresh token (invalid_grant)',
      },
    });
    assert.match((await cli(['credentials', 'list'], '')).stdout, /crm\s+needs_reauthorization/);
    // status says so, as one of its problems.
    const status = await cli(['status', '--json'], '', { TEMPORAL_ADDRESS: temporalAddress() });
    const { problems } = JSON.parse(status.stdout) as { problems: string[] };
    assert.ok(
      problems.includes(
        '1 OAuth2 credential needs reauthorization: the runs that use it fail (credentials list; credentials set)',
      ),
      status.stdout,
    );
    const again = await cli(SET, 'rt-new', { DF_SECRET_CREDENTIALS_KEY: KEY_TEXT });
    assert.equal(again.code, 0, again.stderr);
    const row = await findCredential(db.prisma, 'crm');
    assert.equal(row?.status, 'active');
    assert.equal(openValue(parseMasterKey(KEY_TEXT), 'crm', 'refresh_token', row.refreshToken!), 'rt-new');
    assert.equal(
      await db.prisma.auditEntry.count({ where: { targetId: 'crm', action: 'credential.set' } }),
      2,
    );
  });
});
