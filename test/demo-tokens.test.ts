// `npm start` prints the `export NAME=value` lines an operator's shell needs to reach the demo
// partner (e.g. `durable-fetch sources try demo-fx`): the names are the credentials references of
// examples/sources.yaml, the values the tokens the demo partner is started with. Checked for real:
// the demo sources applied from the file, the partner started as `npm start` starts it, and
// `sources try` of each source run with and without the printed lines.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { parse } from 'yaml';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import {
  applyDemoSources,
  DEMO_SOURCES_FILE,
  demoPartnerTokens,
  demoTokenLines,
  demoTokens,
} from '../worker/stack/demo-source.ts';
import { detail, runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { deleteTestSchedules, testClient } from './helpers/temporal.ts';

const DATE = '2026-11-20';

/** Source id → credentials reference, as examples/sources.yaml writes them. */
async function fileRefs(): Promise<Map<string, string>> {
  const doc = parse(await readFile(DEMO_SOURCES_FILE, 'utf8')) as {
    sources: { id: string; credentialsRef?: string }[];
  };
  return new Map(doc.sources.flatMap((s) => (s.credentialsRef ? [[s.id, s.credentialsRef] as const] : [])));
}

/** `export NAME=value` lines as an environment. */
function exported(lines: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    lines.map((line) => {
      const m = /^export ([A-Z][A-Z0-9_]*)=([A-Za-z0-9._-]+)$/.exec(line);
      assert.ok(m, `an export line a shell takes as is: ${line}`);
      return [m[1]!, m[2]!];
    }),
  );
}

void describe('demo tokens', () => {
  let db: TestDatabase;
  let temporal: Client;
  let partner: PartnerServer;
  let taskQueue: string;

  before(async () => {
    db = await useTestDatabase();
    temporal = await testClient();
    // The partner as `npm start` starts it, in an environment that names no token of its own.
    partner = await startPartner({ port: 0, ...demoPartnerTokens(await demoTokens({})) });
    taskQueue = `demo-tokens-${randomUUID()}`;
    await applyDemoSources({ prisma: db.prisma, temporal, taskQueue, maxFutureDays: 0 }, partner.url);
  });

  after(async () => {
    try {
      if (temporal) await deleteTestSchedules(temporal, [taskQueue]);
    } finally {
      await temporal?.connection.close();
      await partner?.close();
      await db?.drop();
    }
  });

  void it('the export lines name each credentials reference of examples/sources.yaml, once', async () => {
    const lines = demoTokenLines(await demoTokens({}));
    const refs = await fileRefs();
    assert.ok(refs.size > 0);
    assert.deepEqual(Object.keys(exported(lines)).sort(), [...new Set(refs.values())].sort());
  });

  void it('docs/quick-start.md shows the lines npm start prints', async () => {
    const text = await readFile(path.join(PROJECT_ROOT, 'docs', 'quick-start.md'), 'utf8');
    for (const line of demoTokenLines(await demoTokens({}))) {
      assert.ok(text.split('\n').includes(line), `quick-start.md shows ${line}`);
    }
  });

  void it('a token the environment gives is the partner’s, and is never printed', async () => {
    const refs = await fileRefs();
    const env = Object.fromEntries([...refs.values()].map((ref, i) => [ref, `own-secret-${i}`]));
    const tokens = await demoTokens(env);
    assert.deepEqual(Object.values(demoPartnerTokens(tokens)).sort(), Object.values(env).sort());
    const lines = demoTokenLines(tokens).join('\n');
    for (const value of Object.values(env)) assert.ok(!lines.includes(value), lines);
    for (const ref of refs.values()) assert.match(lines, new RegExp(`\\b${ref}\\b`));
  });

  void it('sources try of each demo source with a credential reaches the partner with the printed lines, and not without', async () => {
    const env = exported(demoTokenLines(await demoTokens({})));
    for (const sourceId of (await fileRefs()).keys()) {
      const args = ['sources', 'try', sourceId, '--date', DATE, '--pages', '1'];
      const ok = await runCli(args, { DATABASE_URL: db.url, ...env });
      assert.equal(ok.code, 0, detail(ok));
      assert.match(ok.stdout, /page 1: [1-9]\d* record\(s\)/, detail(ok));
      const without = await runCli(args, { DATABASE_URL: db.url });
      assert.equal(without.code, 1, detail(without));
      assert.match(
        `${without.stdout}${without.stderr}`,
        /CREDENTIALS_MISSING|PermissionDenied/,
        detail(without),
      );
    }
  });
});
