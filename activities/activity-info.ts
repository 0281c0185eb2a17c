/**
 * The info of the activity being executed, or undefined outside one (a direct call: a test, the
 * bench, a library caller). Read from the SDK's context storage, as `Context.current()` reads it,
 * but without the exception `Context.current()` throws outside an activity: a stack trace
 * captured on every call of a step that runs outside one.
 */
import { asyncLocalStorage, type Info } from '@temporalio/activity';

export function currentActivityInfo(): Info | undefined {
  return asyncLocalStorage.getStore()?.info;
}
