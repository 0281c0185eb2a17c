// Which environment variables a source's credentials reference may resolve to.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActivityDeps, isSecretRef } from '../activities/create-deps.ts';
import { loadConfig } from '../runtime/config.ts';
import type { PrismaClient } from '../db/client.ts';
import { createLogger } from '../runtime/logger.ts';

void describe('activity deps', () => {
  void it('credentials references resolve only DF_SECRET_* variables, never other settings', async () => {
    assert.equal(isSecretRef('DF_SECRET_ACME_TOKEN'), true);
    for (const ref of [
      'DATABASE_URL',
      'TEMPORAL_API_KEY',
      'df_secret_x',
      'DF_SECRET_',
      'DF_SECRET_A-B',
      'PATH',
    ]) {
      assert.equal(isSecretRef(ref), false, ref);
    }
    const deps = createActivityDeps(loadConfig({}), {} as PrismaClient, createLogger('silent'));
    process.env.DF_SECRET_UNIT_TEST = 'value-1';
    try {
      assert.equal(deps.secret('DF_SECRET_UNIT_TEST'), 'value-1');
      assert.equal(deps.secret('PATH'), undefined);
    } finally {
      delete process.env.DF_SECRET_UNIT_TEST;
      await deps.http.close();
    }
  });
});
