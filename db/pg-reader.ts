/**
 * A reader (db/sql-reader.ts) on one plain node-postgres connection: what the CLI's read-only
 * listings query through, so that `runs list` and `dlq list` do not load the Prisma runtime and
 * its query compiler (most of such a command's start-up time).
 */
import { createRequire } from 'node:module';
import type * as Pg from 'pg';
import { prismaTypes } from './pg-types.ts';
import type { Pooling } from './connection.ts';
import { CONNECT_TIMEOUT_MS, engineConnection } from './pool-config.ts';
import type { SqlConnection } from './sql-reader.ts';

/**
 * node-postgres, loaded without the fetch implementation. On load it tells Cloudflare Workers from
 * Node by `navigator.userAgent`, and where there is no `navigator` (Node 20; Node 21 and later
 * define one) by constructing a `Response`, which loads undici: a tenth of a listing's start-up.
 * A Node-like `navigator` is lent for the synchronous require only, so nothing else can see it.
 */
function loadPg(): typeof Pg {
  const require = createRequire(import.meta.url);
  if ('navigator' in globalThis) return require('pg') as typeof Pg;
  Object.defineProperty(globalThis, 'navigator', { value: { userAgent: 'Node.js' }, configurable: true });
  try {
    return require('pg') as typeof Pg;
  } finally {
    delete (globalThis as { navigator?: unknown }).navigator;
  }
}

const pg = loadPg();

/**
 * A reader on `url`, through what `pooling` says is in front of PostgreSQL. Connects on the first query (so a connection error is that query's error,
 * with PostgreSQL's SQLSTATE or the socket's code); queries run one after another on the same
 * session. Not for concurrent use by many callers: it is one connection.
 */
export function openPgReader(url: string, pooling: Pooling = 'session'): SqlConnection {
  const client = new pg.Client({
    ...engineConnection(url, pooling),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // Values as Prisma returns them (the {@link SqlReader} contract), on this connection only.
    types: prismaTypes(pg),
  });
  // A session the server ends while idle must not crash the process: the next query fails instead.
  client.on('error', () => undefined);
  let connected: Promise<unknown> | undefined;
  return {
    async query<Row>(text: string, values: readonly unknown[]): Promise<Row[]> {
      await (connected ??= client.connect());
      const result = await client.query(text, [...values]);
      return result.rows as Row[];
    },
    async close() {
      await connected?.then(
        () => client.end().catch(() => undefined),
        () => undefined,
      );
    },
  };
}
