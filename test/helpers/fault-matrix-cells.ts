/**
 * The cells of the fault matrix (test/helpers/fault-matrix.ts runs them): where in a run a fault
 * lands, and the faults — of our processes and servers, landed at a statement by the pg proxy, and
 * of the partner, landed at its first request on a route by the partner's own fault injection.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultSpec } from '../../partner/faults.ts';
import type { RunState } from './backup-stack.ts';
import type { FaultOptions, CutPoint, PgProxy } from './pg-proxy.ts';
import type { Spawned } from './process.ts';

/** Where in a run a fault lands: a statement of the worker's or the publisher's, before or after. */
export interface StatementPoint {
  name: string;
  statement: RegExp;
  point: CutPoint;
  at: NonNullable<FaultOptions['at']>;
  /** Whose statement it is: a fault of the other process does not apply here. */
  process: 'worker' | 'publisher';
  /** The partner refuses every page (HTTP 400): the run must end dead-lettered, once. */
  refused?: boolean;
}

export const POINTS: readonly StatementPoint[] = [
  {
    name: 'before the store transaction',
    statement: /FOR UPDATE\)\s+SELECT s\.id, s\.name/,
    point: 'before',
    at: 'statement',
    process: 'worker',
  },
  {
    name: 'inside it',
    statement: /INSERT INTO fetched_record/,
    point: 'after',
    at: 'statement',
    process: 'worker',
  },
  {
    name: 'at COMMIT',
    statement: /INSERT INTO idempotency_record/,
    point: 'before',
    at: 'end',
    process: 'worker',
  },
  {
    name: 'after commit, before completion',
    statement: /INSERT INTO idempotency_record/,
    point: 'after',
    at: 'end',
    process: 'worker',
  },
  {
    name: 'between the partner call and recording its outcome',
    statement: /partner_id = \$\d+, partner_state/,
    point: 'before',
    at: 'end',
    process: 'worker',
  },
  {
    name: "between a sink's acknowledgement and marking published",
    statement: /SET status = 'published', published_at/,
    point: 'before',
    at: 'end',
    process: 'publisher',
  },
];

/**
 * Each write a run commits, by a statement of it (the engine's own SQL), for a fault at the end
 * of its transaction: before its COMMIT reaches the server (nothing committed) and after the
 * server committed it, before the worker hears (test/faults/commit-kill.test.ts).
 */
const WRITES: readonly { name: string; statement: RegExp; refused?: boolean }[] = [
  { name: 'the claim', statement: /UPDATE fetch_run\s+SET status = 'running',\s+attempt/ },
  { name: "a page's store", statement: /INSERT INTO idempotency_record/ },
  { name: "the run's completion", statement: /SET status = 'succeeded'/ },
  { name: 'the downstream intent', statement: /INSERT INTO downstream_action/ },
  { name: 'counting the partner call', statement: /SET attempts = a\.attempts \+ 1/ },
  { name: "recording the call's outcome", statement: /partner_id = \$\d+, partner_state/ },
  { name: 'the dead letter', statement: /INSERT INTO dead_letter/, refused: true },
];

export const WRITE_POINTS: readonly StatementPoint[] = WRITES.flatMap((w) =>
  (['before', 'after'] as const).map((point): StatementPoint => ({
    name: `${w.name}, ${point === 'before' ? 'before its COMMIT reached the server' : 'after the server committed it'}`,
    statement: w.statement,
    point,
    at: 'end',
    process: 'worker',
    ...(w.refused ? { refused: true } : {}),
  })),
);

/** A fault of a process or a server: what happens while the statement is held, and what brings the system back after. */
export interface StackFault {
  name: string;
  /** The processes whose statements it applies to. */
  applies: readonly StatementPoint['process'][];
  /** Cut the held connection once `atPoint` ran (a fault of the connection), or let it go on. */
  cut: boolean;
  atPoint(stack: MatrixStack): Promise<void>;
  /** After the held statement was cut or released: e.g. wait for a drained process, start it again. */
  after?(stack: MatrixStack): Promise<void>;
}

const BOTH = ['worker', 'publisher'] as const;

export const FAULTS: readonly StackFault[] = [
  {
    name: 'worker SIGKILL',
    applies: ['worker'],
    cut: true,
    atPoint: (s) => s.restartWorker('SIGKILL'),
  },
  {
    name: 'worker SIGTERM',
    applies: ['worker'],
    // Its shutdown waits for the held statement's activity: the statement goes on.
    cut: false,
    atPoint: (s) => {
      s.worker.child.kill('SIGTERM');
      return Promise.resolve();
    },
    after: (s) => s.restartWorker(),
  },
  {
    name: 'worker SIGSTOP 15 s, SIGCONT',
    applies: ['worker'],
    cut: false,
    atPoint: async (s) => {
      s.worker.child.kill('SIGSTOP');
      await sleep(15_000);
      s.worker.child.kill('SIGCONT');
    },
  },
  {
    name: 'publisher SIGKILL',
    applies: ['publisher'],
    cut: true,
    atPoint: (s) => s.restartPublisher(),
  },
  {
    name: 'Temporal SIGKILL, restarted on its state',
    applies: ['worker'],
    cut: false,
    atPoint: (s) => s.restartTemporal(),
  },
  {
    name: 'PostgreSQL stopped hard, restarted',
    applies: BOTH,
    cut: true,
    atPoint: (s) => s.restartPostgres(),
  },
  {
    name: 'PostgreSQL backends terminated',
    applies: BOTH,
    cut: true,
    atPoint: (s) => s.terminateBackends(),
  },
  {
    name: 'PostgreSQL refusing connections 10 s',
    applies: BOTH,
    cut: true,
    atPoint: async (s) => {
      await s.allowConnections(false);
      await s.terminateBackends();
      await sleep(10_000);
      await s.allowConnections(true);
    },
  },
  {
    name: 'PostgreSQL silent 10 s',
    applies: BOTH,
    cut: false,
    atPoint: async (s) => {
      s.proxy.hang();
      await sleep(10_000);
      s.proxy.resume();
    },
  },
  {
    // The run's completion event is routed to JetStream (the rest to the partner's webhook): the
    // outage begins at the point and goes on while the run completes and its event waits.
    name: 'NATS JetStream killed, started 10 s later',
    applies: ['publisher'],
    cut: false,
    atPoint: (s) => s.natsOutage(10_000),
    after: (s) => s.natsBack(),
  },
];

/** A route of the partner's: a partner fault starts at the run's first request there. */
export interface PartnerPoint {
  name: string;
  process: 'partner';
  route: 'records' | 'submissions' | 'events';
}

export const PARTNER_POINTS: readonly PartnerPoint[] = [
  { name: "the partner's pages", process: 'partner', route: 'records' },
  { name: 'the non-idempotent submission', process: 'partner', route: 'submissions' },
  { name: "the sink's deliveries", process: 'partner', route: 'events' },
];

export type InjectionPoint = StatementPoint | PartnerPoint;

/**
 * A fault of the partner's: what it answers every request of the route with, from the run's first
 * request there until the fault ends `lastsMs` later (or after `times` requests).
 */
export interface PartnerFault {
  name: string;
  routes: readonly PartnerPoint['route'][];
  spec: Pick<FaultSpec, 'kind' | 'status' | 'retryAfter' | 'delayMs' | 'lateEffectMs'>;
  times?: number;
  lastsMs: number;
  /** The partner must have applied a request after its client left (else the cell proved nothing). */
  lateEffect?: boolean;
}

export type Fault = StackFault | PartnerFault;

const PARTNER_ROUTES = ['records', 'submissions', 'events'] as const;

/**
 * The partner's outages and hostile habits. Each outlasts a client's response timeout (15 s)
 * where it hangs, and lasts 20 s, long enough to open the partner's breaker.
 */
export const PARTNER_FAULTS: readonly PartnerFault[] = [
  {
    name: 'partner 5xx storm 20 s',
    routes: PARTNER_ROUTES,
    spec: { kind: 'status', status: 503 },
    lastsMs: 20_000,
  },
  {
    name: 'partner 429 storm 20 s, Retry-After 2 s',
    routes: PARTNER_ROUTES,
    spec: { kind: 'status', status: 429, retryAfter: '2' },
    lastsMs: 20_000,
  },
  {
    // Each request waits 20 s and the client leaves at 15 s; the partner (no late effects) does
    // nothing for a client that left, but for a delivered event, which it applies after the wait.
    name: 'partner hanging 20 s',
    routes: PARTNER_ROUTES,
    spec: { kind: 'delay', delayMs: 20_000 },
    lastsMs: 20_000,
  },
  {
    // The client leaves at 15 s, and the partner applies the submission anyway when its 20 s wait
    // ends (a late effect): the run must find it, not submit again.
    name: 'partner late effect',
    routes: ['submissions'],
    spec: { kind: 'delay', delayMs: 20_000, lateEffectMs: 10_000 },
    times: 1,
    lastsMs: 20_000,
    lateEffect: true,
  },
];

/** Whether `fault` can land at `point`. */
export function appliesTo(fault: Fault, point: InjectionPoint): boolean {
  if ('spec' in fault) return point.process === 'partner' && fault.routes.includes(point.route);
  return point.process !== 'partner' && fault.applies.includes(point.process);
}

/** One run of one cell: how it ended, and how long after the fault ended. */
export interface CellRun {
  state: RunState;
  /** The statement (or the partner's request) the fault landed at. */
  statement: string;
  recoveryMs: number;
  /** Deliveries of the run's events beyond the first, which the partner suppressed. */
  suppressed: number;
}

export interface MatrixStack {
  worker: Spawned;
  proxy: PgProxy;
  restartWorker(signal?: NodeJS.Signals): Promise<void>;
  restartPublisher(): Promise<void>;
  restartTemporal(): Promise<void>;
  restartPostgres(): Promise<void>;
  terminateBackends(): Promise<void>;
  allowConnections(allowed: boolean): Promise<void>;
  /** Kills the matrix's NATS server and starts it again `ms` later, without waiting for that. */
  natsOutage(ms: number): Promise<void>;
  /** Resolves once the NATS server killed by `natsOutage` accepts clients again. */
  natsBack(): Promise<void>;
  /** Lands `fault` at `point` of one new run and checks the run against the partner. */
  run(fault: Fault, point: InjectionPoint): Promise<CellRun>;
  stop(): Promise<void>;
}
