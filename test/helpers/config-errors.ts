import assert from 'node:assert/strict';
import { loadConfig } from '../../runtime/config.ts';
import { isUserFacingError } from '../../runtime/errors.ts';

/** The UserFacingError loadConfig throws for `env`; fails the test when it does not throw one. */
export function configError(env: NodeJS.ProcessEnv): { code: string; message: string } {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(isUserFacingError(err), `expected a UserFacingError, got ${String(err)}`);
    return { code: err.code, message: err.message };
  }
  return assert.fail(`loadConfig accepted ${JSON.stringify(env)}`);
}
