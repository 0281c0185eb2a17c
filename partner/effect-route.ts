// What the effect routes (submissions, journal) share: a request prepared before its effect, and
// one injected fault deciding whether, when and how that effect happens and is answered.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type DelayContext, delayFault } from './delay-fault.ts';
import type { ActiveFault, EffectFaultTarget, FaultInjector } from './faults.ts';
import { type HttpError, sendJson } from './http-io.ts';
import type { LedgerInput } from './ledger.ts';

/** What an effect route needs from the server. */
export interface EffectContext extends DelayContext {
  faults: FaultInjector;
  /** The server's late-effect window for `before` delays (0 = off); a fault's own overrides it. */
  lateEffectMs: number;
}

/** What an effect request is about, as its ledger entry records it. */
export type EffectFacts = Pick<LedgerInput, 'reference' | 'submissionId' | 'journalEntryId'>;

/** The normal answer of a request and whether computing it was an effect. */
export interface Outcome extends EffectFacts {
  status: number;
  body: unknown;
  /** True when this request created something (a submission, an entry) or changed its status. */
  effect: boolean;
}

/** The answer of a client error found while applying (e.g. a target gone meanwhile): no effect. */
export function errorOutcome(error: HttpError, facts: Partial<Outcome> = {}): Outcome {
  return {
    ...facts,
    status: error.status,
    body: { error: error.code, message: error.message },
    effect: false,
  };
}

/** A well-formed request on a known target: what a fault matches on and what applying it does. */
export interface Prepared {
  target: EffectFaultTarget;
  /** Facts known before the effect (recorded even when a fault stops it). */
  facts: EffectFacts;
  /** Performs the effect (if any) against the store as it is now, and computes the answer. */
  apply: () => Outcome;
}

/** The facts an outcome found out, in the ledger's key order (absent ones left out). */
function factsOf(outcome: Outcome | undefined): EffectFacts {
  return {
    ...(outcome?.reference === undefined ? {} : { reference: outcome.reference }),
    ...(outcome?.submissionId === undefined ? {} : { submissionId: outcome.submissionId }),
    ...(outcome?.journalEntryId === undefined ? {} : { journalEntryId: outcome.journalEntryId }),
  };
}

/** `entry` with what computing the outcome found out (reference, submission id, effect, status). */
function withOutcome(entry: LedgerInput, outcome: Outcome): LedgerInput {
  return {
    ...entry,
    ...factsOf(outcome),
    status: outcome.status,
    effect: outcome.effect,
  };
}

/** Records the outcome (with the fault's kind, if any) and sends it unless the client is gone. */
function answer(
  res: ServerResponse,
  entry: LedgerInput,
  outcome: Outcome,
  ctx: EffectContext,
  fault: ActiveFault | undefined,
): void {
  ctx.ledger.record({ ...withOutcome(entry, outcome), ...(fault ? { fault: fault.kind } : {}) });
  if (!res.destroyed) sendJson(res, outcome.status, outcome.body);
}

/** With the effect already applied (`after`) or not (`before`), answers as `fault` says. */
async function applyFault(
  req: IncomingMessage,
  res: ServerResponse,
  base: LedgerInput,
  prepared: Prepared,
  fault: ActiveFault,
  ctx: EffectContext,
  path: string,
): Promise<void> {
  const after = fault.phase === 'after';
  // The effect of an `after` fault happens first, whatever the fault then does to the answer.
  const done = after ? prepared.apply() : undefined;
  const entry: LedgerInput = {
    ...base,
    ...prepared.facts,
    ...factsOf(done),
    effect: done?.effect ?? false,
  };
  const kind = fault.kind;
  switch (kind) {
    case 'status': {
      const status = fault.status ?? 503;
      ctx.ledger.record({ ...entry, status, fault: kind });
      const headers: Record<string, string> = fault.retryAfter ? { 'retry-after': fault.retryAfter } : {};
      sendJson(res, status, { error: 'injected_fault', message: `injected status ${status}` }, headers);
      return;
    }
    case 'reset':
      ctx.ledger.record({ ...entry, status: 0, fault: kind });
      req.socket.resetAndDestroy();
      return;
    case 'delay': {
      // Late effects are a `before` matter: an `after` request has had its effect already.
      const lateEffectMs = after ? 0 : (fault.lateEffectMs ?? ctx.lateEffectMs);
      // A client leaving during the wait is recorded by delayFault (499 `client_closed`, with this
      // entry's effect), unless it left late enough for a late effect; either is the only entry.
      const end = await delayFault(res, entry, ctx, fault.delayMs ?? 0, lateEffectMs);
      if (!end.fired) {
        // Cancelled by close(): a `before` request never reached processing and leaves no entry
        // (but one whose client had left still counts as that client's 499); an `after` one did
        // its effect, which the ledger must count.
        if (done) ctx.ledger.record({ ...entry, status: 0, fault: kind });
        else if (end.client === 'late') ctx.ledger.record({ ...entry, status: 499, fault: 'client_closed' });
        req.socket.destroy();
        return;
      }
      // A `before` request whose client left early timed out before any effect: apply nothing.
      if (end.client === 'dropped') return;
      if (end.client === 'late') {
        // The partner finishes what it started although nobody waits for the answer.
        const outcome = prepared.apply();
        ctx.ledger.record({
          ...withOutcome(entry, outcome),
          status: 499,
          fault: 'client_closed',
          late: true,
        });
        return;
      }
      answer(res, entry, done ?? prepared.apply(), ctx, fault);
      return;
    }
    case 'truncate':
    case 'malformed':
    case 'schema':
    case 'page':
    case 'oversize':
    case 'loop':
    case 'empty_page':
    case 'overfull':
    case 'off_origin':
      // parseFaultSpec refuses these kinds for the effect routes.
      throw new Error(`fault kind ${kind} is not supported on ${path}`);
    default: {
      const unknownKind: never = kind;
      throw new Error(`unhandled fault kind ${String(unknownKind)}`);
    }
  }
}

/**
 * Takes at most one fault for `prepared.target` and serves the request under it (see `FaultKind`
 * for phases, kinds and late effects); `base` is the entry recorded, `path` names the route in a
 * bug's message. Side effects: consumes the fault, runs `prepared.apply` at most once, and appends
 * exactly one ledger entry (a `before` delay cancelled by `close()` none, unless its client had
 * left; an `after` one a status-0 entry with its effect).
 */
export async function serveEffect(
  req: IncomingMessage,
  res: ServerResponse,
  base: LedgerInput,
  prepared: Prepared,
  ctx: EffectContext,
  path: string,
): Promise<void> {
  const fault = ctx.faults.take(prepared.target);
  if (!fault) return answer(res, { ...base, ...prepared.facts }, prepared.apply(), ctx, undefined);
  await applyFault(req, res, { ...base, ...prepared.facts }, prepared, fault, ctx, path);
}
