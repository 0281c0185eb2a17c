// Temporal's connection settings as runtime/config.ts reads them through Temporal's envconfig: a
// profile alone selects a cluster, variables override it, and a file, profile or certificate that
// cannot be read is one line that never quotes the file (it may hold an API key).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig, temporalAddress } from '../runtime/config.ts';
import { configError } from './helpers/config-errors.ts';

let dir: string;
let file: string;
const KEY = 'profile-secret-key-0123';

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'df-temporal-config-'));
  await writeFile(path.join(dir, 'ca.pem'), 'not really a CA, read as bytes\n');
  file = path.join(dir, 'temporal.toml');
  await writeFile(
    file,
    [
      '[profile.cloud]',
      'address = "tenant.a1b2c.tmprl.cloud:7233"',
      'namespace = "tenant.a1b2c"',
      `api_key = "${KEY}"`,
      '[profile.cloud.tls]',
      `server_ca_cert_path = "${path.join(dir, 'ca.pem')}"`,
      '',
      '[profile.no-address]',
      'namespace = "somewhere"',
      '',
      '[profile.bad-cert]',
      'address = "x:7233"',
      '[profile.bad-cert.tls]',
      `client_cert_path = "${path.join(dir, 'missing.pem')}"`,
      `client_key_path = "${path.join(dir, 'missing.key')}"`,
      '',
    ].join('\n'),
  );
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('Temporal connection settings (envconfig)', () => {
  it('temporal-config: a profile alone selects the cluster, with its namespace, API key and CA; variables override it', () => {
    const config = loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' });
    assert.equal(temporalAddress(config), 'tenant.a1b2c.tmprl.cloud:7233');
    assert.equal(config.temporal.address, 'tenant.a1b2c.tmprl.cloud:7233');
    assert.equal(config.temporal.namespace, 'tenant.a1b2c');
    assert.equal(config.temporal.connection?.apiKey, KEY);
    const tls = config.temporal.connection?.tls;
    assert.ok(tls && tls !== true, 'TLS settings from the profile');
    assert.equal(
      Buffer.from(tls.serverRootCACertificate ?? []).toString(),
      'not really a CA, read as bytes\n',
    );
    // No local dev server link for a remote cluster.
    assert.equal(config.temporal.uiUrl, undefined);

    const overridden = loadConfig({
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_PROFILE: 'cloud',
      TEMPORAL_NAMESPACE: 'other.a1b2c',
      TEMPORAL_ADDRESS: 'other.a1b2c.tmprl.cloud:7233',
    });
    assert.equal(overridden.temporal.namespace, 'other.a1b2c');
    assert.equal(temporalAddress(overridden), 'other.a1b2c.tmprl.cloud:7233');
    assert.equal(overridden.temporal.connection?.apiKey, KEY);
  });

  it('temporal-config: a missing file, an unknown profile, an unreadable certificate or no address is one line', () => {
    const cases: [NodeJS.ProcessEnv, RegExp][] = [
      [
        { TEMPORAL_CONFIG_FILE: path.join(dir, 'nope.toml') },
        /^TEMPORAL_CONFIG_FILE names no file: .*nope\.toml$/,
      ],
      [
        { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' },
        /^cannot read Temporal's client settings: Profile 'prod' not found in config data; check TEMPORAL_CONFIG_FILE/,
      ],
      [
        { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'bad-cert' },
        /^cannot read Temporal's client settings: ENOENT: no such file or directory, open '.*missing\.pem'; check /,
      ],
      [
        { TEMPORAL_ADDRESS: 'x:7233', TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'gone.pem') },
        /^cannot read Temporal's client settings: ENOENT: .*gone\.pem'; check .*TEMPORAL_TLS_\* paths$/,
      ],
      [
        { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'no-address' },
        /^no Temporal address: set TEMPORAL_ADDRESS, or address in profile "no-address" of TEMPORAL_CONFIG_FILE$/,
      ],
    ];
    for (const [env, pattern] of cases) {
      const { code, message } = configError(env);
      assert.equal(code, 'INVALID_CONFIG');
      assert.match(message, pattern);
      assert.doesNotMatch(message, /\n/);
    }
  });

  it('temporal-config: a TOML syntax error is named by its first line, never by the line holding the API key', async () => {
    const broken = path.join(dir, 'broken.toml');
    await writeFile(broken, `[profile.cloud]\napi_key = "${KEY}\naddress = "a:7233"\n`);
    const { code, message } = configError({ TEMPORAL_CONFIG_FILE: broken, TEMPORAL_PROFILE: 'cloud' });
    assert.equal(code, 'INVALID_CONFIG');
    assert.match(message, /^cannot read Temporal's client settings: Invalid TOML document: /);
    assert.ok(!message.includes(KEY), message);
    assert.doesNotMatch(message, /\n/);
  });
});
