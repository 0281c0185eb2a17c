/**
 * The engine's own statements without the Prisma client's cost, on the same connections.
 *
 * Inside a transaction (`inTransaction`): the transaction stays Prisma's — Prisma opens it, a
 * job's code writes its business rows through Prisma's transaction client, and Prisma commits it
 * or rolls it back, with its own timeout — but the engine's fixed statements in it (a run's lock,
 * the staged page, the fenced write of events, idempotency record and run) go to the
 * transaction's own connection through node-postgres, the driver under Prisma's adapter. Outside
 * one (`engineSql`): to the client's own pool, the same way. The same SQL (Prisma.sql), the same
 * values, the same JS types of the rows, the same prepared-statement names. Through the Prisma
 * client a raw statement costs several times the driver's CPU (its parameters serialised to JSON
 * and parsed back, a request planned and interpreted, the rows converted), more with kilobytes of
 * JSON: most of a stored page's client CPU (docs/performance.md).
 *
 * A transaction's connection is lent only for the transaction's life: once Prisma sends COMMIT or
 * ROLLBACK (its own timeout included), a statement on the lent connection fails without being
 * sent, so it can never run outside the transaction, nor inside another one on a connection the
 * pool reused. Clients built elsewhere (another adapter) lend nothing: the statements then go
 * through Prisma's client, with the same effect.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { Prisma, type PrismaClient } from '../prisma/generated/client.ts';
import { DriverStatementError } from './driver-error.ts';
import { prismaTypes } from './pg-types.ts';
import { ENGINE_SCHEMA } from '../contract/engine-schema.ts';

/** `$queryRaw` and `$executeRaw` as Prisma's transaction client has them: the engine's statements. */
export type EngineSql = Pick<Prisma.TransactionClient, '$queryRaw' | '$executeRaw'>;

/** Names a statement by its text, as the adapter's `statementNameGenerator` does. */
type StatementNamer = (query: { sql: string }) => string;

type AdapterTransaction = Awaited<ReturnType<Awaited<ReturnType<PrismaPg['connect']>>['startTransaction']>>;

/** A transaction's slot for its lent connection, set when the adapter starts the transaction. */
interface Slot {
  sql?: EngineSql;
}

const slots = new AsyncLocalStorage<Slot>();

const RESULT_TYPES = prismaTypes(pg);

/** The statements that end a transaction, as Prisma's transaction manager sends them. */
const ENDS_TRANSACTION = /^\s*(COMMIT|ROLLBACK)\s*;?\s*$/i;

/** A value as node-postgres should send it: a Date as UTC ISO text, as Prisma sends it. */
function sendable(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(sendable);
  return value;
}

/**
 * `$queryRaw` / `$executeRaw` on a node-postgres connection: the statement Prisma would build
 * (Prisma.sql: the same text, the same values) sent as it is, named by `name` when given (prepared
 * once per connection, as the adapter prepares its own), its rows read as Prisma reads them.
 * `isOpen`, when given, is asked before each statement: a closed transaction sends nothing.
 * `onFailure` hears of each statement that failed.
 * @throws DriverStatementError with the driver's error as its cause.
 */
export function driverSql(
  client: pg.ClientBase | pg.Pool,
  {
    name,
    isOpen,
    onFailure,
  }: { name?: StatementNamer | undefined; isOpen?: () => boolean; onFailure?: (err: unknown) => void } = {},
): EngineSql {
  const send = async (strings: TemplateStringsArray | Prisma.Sql, values: unknown[]) => {
    const q = strings instanceof Prisma.Sql ? strings : Prisma.sql(strings, ...values);
    if (isOpen && !isOpen()) {
      throw new DriverStatementError('the transaction has already ended; the statement was not sent', {
        code: 'TRANSACTION_ENDED',
      });
    }
    try {
      return await client.query({
        text: q.text,
        values: q.values.map(sendable),
        name: name?.({ sql: q.text }) ?? '',
        types: RESULT_TYPES,
      });
    } catch (err) {
      onFailure?.(err);
      throw new DriverStatementError((err as Error).message, { cause: err });
    }
  };
  const sql = {
    $queryRaw: async (strings: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) =>
      (await send(strings, values)).rows as unknown[],
    $executeRaw: async (strings: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) =>
      (await send(strings, values)).rowCount ?? 0,
  };
  return sql as unknown as EngineSql;
}

/** A PostgreSQL error as node-postgres reports it: the server's severity and SQLSTATE. */
const fromServer = (err: unknown) =>
  typeof (err as { severity?: unknown }).severity === 'string' &&
  typeof (err as { code?: unknown }).code === 'string';

/**
 * Whether a statement's failure says the connection, not the statement, failed: anything but the
 * server's own answer (a SQLSTATE), as node-postgres or Prisma's adapter passes it on — a socket
 * error, the connection ended, or the driver's `query_timeout` (a server that stopped answering).
 */
function connectionFailed(err: unknown): boolean {
  if (fromServer(err)) return false;
  const driver = (err as { name?: unknown; cause?: { originalCode?: unknown } }) ?? {};
  return !(driver.name === 'DriverAdapterError' && typeof driver.cause?.originalCode === 'string');
}

/**
 * What ending a transaction failed with. The server's own refusal (a serialization failure or a
 * deferred constraint at COMMIT) is passed on as it is. Anything else is the connection failing
 * while the transaction ends — the server stopped or restarted, the network dropped: node-postgres
 * rejects with a plain Error ("Connection terminated unexpectedly", "… is not queryable") that
 * carries no code, which would read as a bug. It becomes a DriverStatementError with a code that
 * says so: an outage, retried; the step's idempotency settles a COMMIT whose outcome is unknown.
 */
function endFailure(err: unknown, statement: 'COMMIT' | 'ROLLBACK'): unknown {
  if (fromServer(err)) return err;
  const code = statement === 'COMMIT' ? 'COMMIT_OUTCOME_UNKNOWN' : 'CONNECTION_LOST';
  return new DriverStatementError(`${statement}: the connection failed (${(err as Error)?.message})`, {
    cause: err,
    code,
  });
}

/**
 * What starting a transaction failed with. A failure the adapter labelled (a socket error, a
 * SQLSTATE) is passed on as it is. Anything else is the connection closing under the checkout or
 * the BEGIN without a word — a database restarting behind a proxy, a pooler or a load balancer
 * accepts the connection and then drops it: node-postgres rejects with a plain Error ("Connection
 * terminated unexpectedly") that the adapter passes through unlabelled, which would read as a bug.
 * It becomes a DriverStatementError saying so: an outage, retried. Nothing was written.
 */
function startFailure(err: unknown): unknown {
  const labelled =
    fromServer(err) ||
    (err instanceof Error && err.name === 'DriverAdapterError') ||
    typeof (err as { code?: unknown })?.code === 'string';
  if (labelled) return err;
  return new DriverStatementError(`BEGIN: the connection failed (${(err as Error)?.message})`, {
    cause: err,
    code: 'CONNECTION_LOST',
  });
}

/**
 * Watches how `tx` ends: `ended` is called as soon as COMMIT or ROLLBACK is sent, and a failure
 * to end it is reported by {@link endFailure}. Once a statement of the transaction failed on its
 * connection (`broken()`: a socket error, the connection ended, a server that stopped answering
 * until the driver's `query_timeout`), nothing more is sent on it — a ROLLBACK would queue behind
 * a statement that may never be answered — and the connection is closed instead of going back to
 * the pool: closing it is the rollback, and the pool opens a fresh one.
 */
function watchEnd(
  tx: AdapterTransaction,
  ended: () => void,
  broken: () => boolean,
  onFailure: (err: unknown) => void,
): void {
  for (const method of ['executeRaw', 'queryRaw'] as const) {
    const run = tx[method].bind(tx) as (query: { sql: string }) => Promise<never>;
    tx[method] = async (query) => {
      const ends = ENDS_TRANSACTION.exec(query.sql)?.[1]?.toUpperCase() as 'COMMIT' | 'ROLLBACK' | undefined;
      if (!ends) {
        try {
          return await run(query);
        } catch (err) {
          onFailure(err);
          throw err;
        }
      }
      ended();
      if (broken()) {
        if (ends === 'ROLLBACK') return 0 as never;
        throw new DriverStatementError('COMMIT: not sent, the connection failed during the transaction', {
          code: 'CONNECTION_LOST',
        });
      }
      try {
        return await run(query);
      } catch (err) {
        onFailure(err);
        throw endFailure(err, ends);
      }
    };
  }
  // PgTransaction keeps its pool client as `client` and its listener removal as `cleanup`.
  const held = tx as unknown as { client?: pg.PoolClient; cleanup?: () => void };
  for (const [method, statement] of [
    ['commit', 'COMMIT'],
    ['rollback', 'ROLLBACK'],
  ] as const) {
    const end = tx[method].bind(tx);
    tx[method] = async () => {
      ended();
      if (broken() && typeof held.client?.release === 'function') {
        held.cleanup?.();
        held.client.release(new Error('the connection failed during the transaction'));
        return;
      }
      try {
        return await end();
      } catch (err) {
        throw endFailure(err, statement);
      }
    };
  }
}

/**
 * Lends `tx`'s connection to the {@link inTransaction} that started it, if one did, and reports a
 * failure to end it as what it is (see {@link endFailure}) whether or not it was lent.
 */
function lend(tx: AdapterTransaction, name: StatementNamer | undefined): AdapterTransaction {
  const slot = slots.getStore();
  // PgTransaction keeps its pool client as `client` (protected in its types).
  const client = (tx as unknown as { client?: pg.PoolClient }).client;
  let open = true;
  let broken = false;
  const onFailure = (err: unknown) => {
    if (connectionFailed(err)) broken = true;
  };
  watchEnd(
    tx,
    () => {
      open = false;
    },
    () => broken,
    onFailure,
  );
  if (!slot || slot.sql || typeof client?.query !== 'function') return tx;
  slot.sql = driverSql(client, { name, isOpen: () => open, onFailure });
  return tx;
}

/**
 * Prisma's node-postgres adapter, lending each transaction's connection to the
 * {@link inTransaction} that started it.
 */
export class LendingPrismaPg extends PrismaPg {
  readonly #name: StatementNamer | undefined;
  readonly #first: string | undefined;

  /**
   * `transactionSettings`: a statement each transaction sends first, right after BEGIN, on its own
   * connection (the session bounds behind a transaction pooler: db/pool-config.ts).
   */
  constructor(
    pool: pg.Pool | pg.PoolConfig,
    {
      transactionSettings,
      ...options
    }: {
      statementNameGenerator?: StatementNamer | undefined;
      disposeExternalPool?: boolean;
      transactionSettings?: string | undefined;
    } = {},
  ) {
    // Prisma names every table with the adapter's schema: the engine's own (db/pool-config.ts).
    super(pool, { ...options, schema: ENGINE_SCHEMA });
    this.#name = options.statementNameGenerator;
    this.#first = transactionSettings;
  }

  override async connect(): ReturnType<PrismaPg['connect']> {
    const adapter = await super.connect();
    const start = adapter.startTransaction.bind(adapter);
    const first = this.#first;
    adapter.startTransaction = async (isolationLevel) => {
      let tx: AdapterTransaction;
      try {
        tx = await start(isolationLevel);
      } catch (err) {
        throw startFailure(err);
      }
      if (first !== undefined) {
        try {
          await tx.executeRaw({ sql: first, args: [], argTypes: [] });
        } catch (err) {
          await tx.rollback().catch(() => undefined);
          throw startFailure(err);
        }
      }
      return lend(tx, this.#name);
    };
    return adapter;
  }
}

/** Each client's driver-level statements on its own pool, for {@link engineSql}. */
const poolSql = new WeakMap<PrismaClient, EngineSql>();

/** Registers `sql` (the client's pool, through the driver) as `prisma`'s {@link engineSql}. */
export function lendPool(prisma: PrismaClient, sql: EngineSql): void {
  poolSql.set(prisma, sql);
}

/**
 * What the engine's statements outside a transaction go through: `prisma`'s own pool through the
 * driver, for a client that registered one (db/client.ts `prismaOn` does), else `prisma` itself.
 * The same statements, the same pool and session settings, without the Prisma client's cost.
 */
export function engineSql(prisma: PrismaClient): EngineSql {
  return poolSql.get(prisma) ?? prisma;
}

/**
 * `prisma.$transaction(fn, options)`, with `sql` for the engine's own statements: on the
 * transaction's connection through the driver when `prisma` is on {@link LendingPrismaPg}, else
 * Prisma's transaction client itself. `fn` must not send on `sql` and `tx` at once (one
 * connection, one statement at a time), nor keep `sql` past its return.
 */
export function inTransaction<T>(
  prisma: PrismaClient,
  fn: (tx: Prisma.TransactionClient, sql: EngineSql) => Promise<T>,
  options?: { maxWait?: number; timeout?: number },
): Promise<T> {
  const slot: Slot = {};
  return slots.run(slot, () => prisma.$transaction((tx) => fn(tx, slot.sql ?? tx), options));
}
