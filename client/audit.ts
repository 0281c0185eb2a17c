/**
 * Who acts, and why, in the audited operator commands (compensations, dead letters, sources):
 * the default actor and the checks of the actor and of the free text kept in `audit_entry`.
 */
import os from 'node:os';
import { UserFacingError } from '../runtime/errors.ts';

/** Longest actor name kept. */
export const MAX_ACTOR_LENGTH = 200;

/**
 * Who is acting when the CLI is not told (`--by`): the OS user running it.
 * (Reads USER itself: the one environment value the CLI takes outside runtime/config.ts.)
 */
export function defaultActor(env: NodeJS.ProcessEnv = process.env): string {
  const user = env.USER;
  if (user) return user;
  try {
    return os.userInfo().username;
  } catch {
    return 'unknown';
  }
}

/** The actor, trimmed. @throws UserFacingError INVALID_INPUT unless 1..MAX_ACTOR_LENGTH characters. */
export function checkActor(actor: string): string {
  const trimmed = actor.trim();
  if (trimmed.length < 1 || trimmed.length > MAX_ACTOR_LENGTH) {
    throw new UserFacingError(`the actor (--by) must be 1..${MAX_ACTOR_LENGTH} characters`, 'INVALID_INPUT');
  }
  return trimmed;
}

/**
 * Free text (a note, a reason), trimmed. `what` names it in the message, e.g. 'the reason (--reason)'.
 * @throws UserFacingError INVALID_INPUT unless 1..`max` characters.
 */
export function checkText(text: string, what: string, max: number): string {
  const trimmed = text.trim();
  if (trimmed.length < 1 || trimmed.length > max) {
    throw new UserFacingError(`${what} must be 1..${max} characters`, 'INVALID_INPUT');
  }
  return trimmed;
}
