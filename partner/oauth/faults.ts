// Faults of the token endpoint: the crash windows a client of a rotating authorization server must
// survive, switched on by a test (or `POST /_admin/oauth/faults`).
import { z } from 'zod';
import { GRANT_TYPES, type GrantType } from './authority.ts';

/**
 * - `drop_before_issue`: the connection is closed before anything is decided (the request had no
 *   effect);
 * - `drop_after_issue`: the grant is applied (a rotation has happened) and the connection closed
 *   instead of the answer: the caller sees a connection error, the ledger entry `dropped`;
 * - `unavailable`: 503 `temporarily_unavailable`, no effect.
 */
export const OAUTH_FAULT_KINDS = ['drop_before_issue', 'drop_after_issue', 'unavailable'] as const;
export type OAuthFaultKind = (typeof OAUTH_FAULT_KINDS)[number];

/** A fault as `OAuthFaults.add` and the admin route take it. */
export interface OAuthFaultSpec {
  kind: OAuthFaultKind;
  /** Only requests presenting this client id (absent = any). */
  clientId?: string;
  /** Only requests of this grant type (absent = any). */
  grantType?: GrantType;
  /** Requests it shapes before it is spent; default 1. */
  times?: number;
}

/** A fault as kept, with its id and the hits it has left. */
export interface ActiveOAuthFault extends OAuthFaultSpec {
  id: string;
  remaining: number;
}

/** Thrown by `OAuthFaults.add` for a spec it refuses; `message` says why. */
export class InvalidOAuthFaultError extends Error {
  override readonly name = 'InvalidOAuthFaultError';
}

const faultSpecSchema = z.strictObject({
  kind: z.enum(OAUTH_FAULT_KINDS),
  clientId: z.string().min(1).max(128).optional(),
  grantType: z.enum(GRANT_TYPES).optional(),
  times: z.int().min(1).max(100_000).optional(),
});

/** When a fault is consulted: before the grant is applied, or after it succeeded. */
export type FaultPhase = 'before' | 'after';

const PHASE: Record<OAuthFaultKind, FaultPhase> = {
  drop_before_issue: 'before',
  unavailable: 'before',
  drop_after_issue: 'after',
};

/** The token endpoint's switched-on faults. */
export class OAuthFaults {
  readonly #faults: ActiveOAuthFault[] = [];
  #nextId = 1;

  /** Adds a fault (untrusted input is validated); returns its id. Throws `InvalidOAuthFaultError`. */
  add(spec: unknown): string {
    const parsed = faultSpecSchema.safeParse(spec);
    if (!parsed.success) throw new InvalidOAuthFaultError(z.prettifyError(parsed.error));
    const id = `oauth-fault-${this.#nextId++}`;
    this.#faults.push({ ...parsed.data, id, remaining: parsed.data.times ?? 1 });
    return id;
  }

  /**
   * The first fault of `phase` matching the request, spending one of its hits (a spent fault is
   * removed). Side effect: decrements or removes it.
   */
  take(phase: FaultPhase, request: { clientId?: string; grantType?: string }): ActiveOAuthFault | undefined {
    const index = this.#faults.findIndex(
      (f) =>
        PHASE[f.kind] === phase &&
        (f.clientId === undefined || f.clientId === request.clientId) &&
        (f.grantType === undefined || f.grantType === request.grantType),
    );
    const fault = this.#faults[index];
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining === 0) this.#faults.splice(index, 1);
    return { ...fault };
  }

  /** The faults still active (copies). */
  list(): ActiveOAuthFault[] {
    return this.#faults.map((f) => ({ ...f }));
  }

  /** Removes every fault; returns how many there were. */
  clear(): number {
    const cleared = this.#faults.length;
    this.#faults.length = 0;
    return cleared;
  }
}
