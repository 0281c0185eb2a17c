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

/** Where the fault lands: before the ending statement is sent, or after the server answered it. */
export type CutPoint = 'before' | 'after';

interface Armed {
  match: RegExp;
  point: CutPoint;
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
   * Arms one fault: at the end of the next transaction (or lone statement) one of whose statements
   * matches `match`. Resolves with that transaction's statements once `fault` has run and the
   * client's connection is cut.
   */
  atEndOf(match: RegExp, point: CutPoint, fault: () => Promise<void>): Promise<string[]>;
  /** Holds every byte both ways, and new connections' too, until {@link resume}. */
  hang(): void;
  /** Delivers what was held and forwards again. */
  resume(): void;
  /** Cuts every connection (both sides). */
  cutAll(): void;
  close(): Promise<void>;
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
  let armed: Armed | undefined;
  let hung = false;
  const held: (() => void)[] = [];
  /** Runs `send` now, or once resumed when the proxy hangs. */
  const pass = (send: () => void) => (hung ? held.push(send) : send());

  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', cut).on('close', cut);
    upstream.on('error', cut).on('close', cut);

    const named = new Map<string, string>();
    let transaction: string[] = [];
    let inTransaction = false;
    /** Set once this connection's ending statement was sent and the proxy waits for its answer. */
    let awaiting: Armed | undefined;
    let tripped = false;

    const trip = (fault: Armed) => {
      tripped = true;
      const statements = transaction;
      void fault
        .fault()
        .then(() => fault.done(statements), fault.failed)
        .finally(cut);
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

    const fromClient = new Framer(true);
    client.on('data', (chunk) => {
      if (tripped) return;
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
          const fault = armed;
          if (ending && fault && transaction.some((s) => fault.match.test(s))) {
            armed = undefined;
            if (fault.point === 'before') {
              trip(fault);
              return;
            }
            awaiting = fault;
          }
        }
        pass(() => upstream.write(message));
      }
    });

    const fromServer = new Framer(false);
    upstream.on('data', (chunk) => {
      if (tripped) return;
      for (const message of fromServer.push(chunk)) {
        // Ready for query after the ending statement: it is done (committed), and unheard of.
        if (awaiting && message[0] === 'Z'.charCodeAt(0)) {
          trip(awaiting);
          return;
        }
        if (awaiting) continue;
        pass(() => client.write(message));
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
    atEndOf(match, point, fault) {
      return new Promise((done, failed) => {
        armed = { match, point, fault, done, failed };
      });
    },
    hang() {
      hung = true;
    },
    resume() {
      hung = false;
      for (const send of held.splice(0)) send();
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
