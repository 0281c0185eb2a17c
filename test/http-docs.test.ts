// docs/http-sources.md shows, for each imitated API, the config the conformance suite runs against
// it: this test keeps the two equal (strings compared with their whitespace collapsed, so that a
// GraphQL query can sit on one line in the docs), and checks that each config the docs show is one
// the http job accepts.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { httpJobConfigSchema } from '../jobs/http/config.ts';
import { API_NAMES } from '../partner/apis/index.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { API_CONFIGS } from './helpers/partner-apis.ts';

const collapse = (v: unknown): unknown =>
  typeof v === 'string'
    ? v.replace(/\s+/g, ' ').trim()
    : Array.isArray(v)
      ? v.map(collapse)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, collapse(x)]))
        : v;

test('http-sources.md: each real API is shown with the config the conformance suite runs', async () => {
  const text = await readFile(path.join(PROJECT_ROOT, 'docs', 'http-sources.md'), 'utf8');
  const shown = new Map<string, unknown>();
  for (const [, api = '', json = ''] of text.matchAll(
    /^### .*\(`([a-z-]+)`\)\n[\s\S]*?```json\n([\s\S]*?)\n```/gm,
  )) {
    shown.set(api, JSON.parse(json));
  }
  assert.deepEqual([...shown.keys()].sort(), [...API_NAMES].sort(), 'one example per imitated API');
  for (const [api, config] of shown) {
    assert.deepEqual(
      config,
      collapse(API_CONFIGS[api as keyof typeof API_CONFIGS]),
      `${api}: the docs show its config`,
    );
    const parsed = httpJobConfigSchema.safeParse(config);
    assert.ok(parsed.success, `${api}: ${JSON.stringify(parsed.error?.issues)}`);
  }
});
