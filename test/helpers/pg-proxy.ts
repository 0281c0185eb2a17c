/**
 * A TCP proxy in front of a PostgreSQL, owned by a test, that reads the wire protocol (v3) as it
 * passes so that a fault lands at an exact point of a transaction:
 * - {@link PgProxy.atEndOf}: the statement that ends the transaction whose statements match a
 *   pattern (its COMMIT, or the statement itself when it ran on its own, which is its own commit) —
 *   either before it reaches the server (nothing committed) or after the server answered it (it
 *   committed; the client never hears so). The test's `fault` then runs (e.g. kills the server),
 *   and the client's connection is cut.
 * - {@link PgProxy.hang}: packets stop moving both ways and new connections get no answer — a
 *   network partition, or a failover behind a stale address: no reset, no refusal, only silence —
 *   until {@link PgProxy.resume} delivers what was held, as TCP would once the path heals.
 */
import net from 'node:net';

/** Where the fault lands: before the statement is sent, or after the server answered it. */
export type CutPoint = 'before' | 'after';

/** Options of {@link PgProxy.atEndOf}. */
export interface FaultOptions {
  /**
   * `end` (default): at the statement that ends the transaction a matching statement is part of
   * (its COMMIT, or the statement itself when it ran on its own). `statement`: at the matching
   * statement itself, inside its transaction.
   */
  at?: 'end' | 'statement';
  /**
   * Whether the client's connection is cut once `fault` has run (default true). When false, what
   * was held is passed on (the statement sent, or its answer delivered) and the connection goes
   * on: for a fault of the process, not of the connection (a frozen or restarted Temporal).
   */
  cut?: boolean;
}

interface Armed {
  match: RegExp;
  point: CutPoint;
  options: Required<FaultOptions>;
  fault: () => Promise<void>;
  done: (statements: string[]) => void;
  failed: (err: unknown) => void;
}

export interface PgProxy {
  /** The proxy's port on 127.0.0.1. */
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  /**
   * Arms one fault: at the next statement that ends a transaction (or lone statement) one of whose
   * statements matches `match` (or at the matching statement itself: `options.at`). Resolves with
   * that transaction's statements so far once `fault` has run and the connection was cut or
   * released.
   */
  atEndOf(
    match: RegExp,
    point: CutPoint,
    fault: () => Promise<void>,
    options?: FaultOptions,
  ): Promise<string[]>;
  /** Holds every byte both ways, and new connections' too, until {@link resume}. */
  hang(): void;
  /** Delivers what was held and forwards again. */
  resume(): void;
  /** Cuts every connection (both sides). */
  cutAll(): void;
  close(): Promise<void>;
}

/** One direction of a connection: messages pass at once, or are queued while it is held. */
class Gate {
  private queue: Buffer[] = [];
  private holds = 0;
  constructor(private readonly write: (message: Buffer) => void) {}

  pass(message: Buffer): void {
    if (this.holds > 0) this.queue.push(message);
    else this.write(message);
  }

  hold(): void {
    this.holds++;
  }

  release(): void {
    if (this.holds === 0 || --this.holds > 0) return;
    for (const message of this.queue.splice(0)) this.write(message);
  }
}

const ENDS = /^\s*(COMMIT|END|ROLLBACK|ABORT)\b/i;
const BEGINS = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;

/** Splits a stream into protocol messages: a type byte and an int32 length (the startup has no type). */
class Framer {
  private buffer = Buffer.alloc(0);
  constructor(private startup: boolean) {}

  push(chunk: Buffer): Buffer[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const messages: Buffer[] = [];
    for (;;) {
      const header = this.startup ? 4 : 5;
      if (this.buffer.length < header) break;
      const length = this.buffer.readInt32BE(this.startup ? 0 : 1) + (this.startup ? 0 : 1);
      if (this.buffer.length < length) break;
      messages.push(this.buffer.subarray(0, length));
      this.buffer = this.buffer.subarray(length);
      this.startup = false;
    }
    return messages;
  }
}

/** The NUL-terminated string at `offset` of `body`, and the offset after it. */
function cstring(body: Buffer, offset: number): [string, number] {
  const end = body.indexOf(0, offset);
  return [body.toString('utf8', offset, end), end + 1];
}

export async function startPgProxy(target: { host: string; port: number }): Promise<PgProxy> {
  const sockets = new Set<net.Socket>();
  const gates = new Set<Gate>();
  let armed: Armed | undefined;
  let hung = false;

  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const toServer = new Gate((m) => upstream.write(m));
    const toClient = new Gate((m) => client.write(m));
    for (const gate of [toServer, toClient]) {
      gates.add(gate);
      if (hung) gate.hold();
    }
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    const cut = () => {
      client.destroy();
      upstream.destroy();
      gates.delete(toServer);
      gates.delete(toClient);
    };
    client.on('error', cut).on('close', cut);
    upstream.on('error', cut).on('close', cut);

    const named = new Map<string, string>();
    let transaction: string[] = [];
    let inTransaction = false;
    /** Set once the statement the fault waits on was sent, until its answer comes back. */
    let awaiting: Armed | undefined;

    /** Runs the fault with `gate` held, then cuts the connection or lets what was held through. */
    const trip = (fault: Armed, gate: Gate) => {
      gate.hold();
      const statements = [...transaction];
      void fault
        .fault()
        .then(() => fault.done(statements), fault.failed)
        .finally(() => (fault.options.cut ? cut() : gate.release()));
    };

    /** The statement text a client message runs, if it runs one. */
    const statementOf = (message: Buffer): string | undefined => {
      const type = String.fromCharCode(message[0] ?? 0);
      if (type === 'Q') return cstring(message, 5)[0];
      if (type === 'P') {
        const [name, at] = cstring(message, 5);
        named.set(name, cstring(message, at)[0]);
        return undefined;
      }
      if (type === 'B') {
        const [, at] = cstring(message, 5);
        return named.get(cstring(message, at)[0]);
      }
      return undefined;
    };

    /** The armed fault, if `statement` (just added to the transaction) is where it lands. */
    const landsAt = (statement: string, ending: boolean): Armed | undefined => {
      const fault = armed;
      if (!fault) return undefined;
      const here =
        fault.options.at === 'statement'
          ? fault.match.test(statement)
          : ending && transaction.some((s) => fault.match.test(s));
      return here ? fault : undefined;
    };

    const fromClient = new Framer(true);
    client.on('data', (chunk) => {
      for (const message of fromClient.push(chunk)) {
        const statement = statementOf(message);
        if (statement !== undefined) {
          if (BEGINS.test(statement)) {
            inTransaction = true;
            transaction = [statement];
          } else {
            if (!inTransaction) transaction = [];
            transaction.push(statement);
          }
          const ending = ENDS.test(statement) || !inTransaction;
          if (ENDS.test(statement)) inTransaction = false;
          const fault = landsAt(statement, ending);
          if (fault) {
            armed = undefined;
            if (fault.point === 'before') trip(fault, toServer);
            else awaiting = fault;
          }
        }
        toServer.pass(message);
      }
    });

    const fromServer = new Framer(false);
    upstream.on('data', (chunk) => {
      for (const message of fromServer.push(chunk)) {
        // Ready for query after the statement: it is done (committed, when it ended a
        // transaction), and the client has not heard so yet.
        if (awaiting && message[0] === 'Z'.charCodeAt(0)) {
          trip(awaiting, toClient);
          awaiting = undefined;
        }
        toClient.pass(message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;

  return {
    port,
    via(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    atEndOf(match, point, fault, options = {}) {
      return new Promise((done, failed) => {
        armed = { match, point, fault, done, failed, options: { at: 'end', cut: true, ...options } };
      });
    },
    hang() {
      if (hung) return;
      hung = true;
      for (const gate of gates) gate.hold();
    },
    resume() {
      if (!hung) return;
      hung = false;
      for (const gate of gates) gate.release();
    },
    cutAll() {
      for (const s of sockets) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
