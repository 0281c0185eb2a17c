// Salesforce REST API: `GET /services/data/vXX.X/query?q=<SOQL>`, the accounts created in one day.
// Facts from Salesforce's REST API Developer Guide ("Query", "Query More Results", "Query Options
// Header", "Status Codes and Error Responses"), each a habit here:
// - the answer is `{ "totalSize", "done", "nextRecordsUrl", "records" }`; while `done` is false,
//   `nextRecordsUrl` is the next batch's URL, relative (a path from the host, with a query
//   locator: `/services/data/v60.0/query/01gD0000002HU6KIAW-2000`); on the last batch `done` is
//   true and `nextRecordsUrl` is left out;
// - the batch size is a hint (`Sforce-Query-Options: batchSize=n`, 200..2000, default 2000):
//   "there is no guarantee that the requested batch size is the actual batch size", so batches
//   come larger than a client asks (habit `server_batch`: batches of pageSize whatever was asked);
// - errors are an array `[{ "message", "errorCode" }]`: a wrong token is 401 `INVALID_SESSION_ID`,
//   an unknown locator 400 `INVALID_QUERY_LOCATOR`, a query the imitation cannot read 400
//   `MALFORMED_QUERY`, the org's daily API limit 403 `REQUEST_LIMIT_EXCEEDED` (habit
//   `request_limit`: no wait helps, the run must stop).
// The imitation reads `SELECT … FROM Account WHERE DAY_ONLY(CreatedDate) = <YYYY-MM-DD>` and
// nothing else. Its `nextRecordsUrl` starts with the imitation's prefix (`/apis/salesforce`), as a
// real one starts at the instance's root.
import { secretEquals } from '../auth.ts';
import {
  answer,
  type ApiAnswer,
  type ApiCall,
  type ApiDefinition,
  BASE62,
  bearerOf,
  charsOf,
  collection,
  createdAt,
  headerOf,
} from './kit.ts';
import { isValidDate } from '../records.ts';

interface Account {
  attributes: { type: 'Account'; url: string };
  Id: string;
  Name: string;
  CreatedDate: string;
}

const QUERY = /^\/services\/data\/(v\d{2,3}\.\d)\/query\/?$/;
const MORE = /^\/services\/data\/(v\d{2,3}\.\d)\/query\/01g([0-9a-f]{1,80})-(\d{1,7})$/;
const SOQL =
  /^SELECT\s+.+\s+FROM\s+Account\s+WHERE\s+DAY_ONLY\(CreatedDate\)\s*=\s*(\d{4}-\d{2}-\d{2})(?:\s+ORDER\s+BY\s+\w+(?:\s+(?:ASC|DESC))?)?$/i;
const MIN_BATCH = 200;
const MAX_BATCH = 2000;

function error(
  status: number,
  errorCode: string,
  message: string,
  extras: Partial<ApiAnswer> = {},
): ApiAnswer {
  return answer(status, [{ message, errorCode }], extras);
}

/** The query locator of a scope's query in batches of `batch`. */
function locator(scope: string, batch: number): string {
  return `01g${Buffer.from(`${scope}|${batch}`, 'utf8').toString('hex')}`;
}

/** The batch size a client asked for, as Salesforce takes it: clamped to 200..2000. */
function askedBatch(call: ApiCall): number {
  const option = /batchSize=(\d{1,6})/.exec(headerOf(call.headers, 'sforce-query-options') ?? '')?.[1];
  return Math.min(MAX_BATCH, Math.max(MIN_BATCH, option === undefined ? MAX_BATCH : Number(option)));
}

function serve(call: ApiCall): ApiAnswer {
  const token = bearerOf(call.headers);
  if (token === undefined || !secretEquals(token, call.token)) {
    return error(401, 'INVALID_SESSION_ID', 'Session expired or invalid', { authorized: false });
  }
  if (call.method !== 'GET')
    return error(405, 'METHOD_NOT_ALLOWED', `HTTP Method '${call.method}' not allowed. Allowed are GET`);
  const first = QUERY.exec(call.path);
  const more = MORE.exec(call.path);
  let scope: string;
  let batch: number;
  let from: number;
  let version: string;
  let position: string | null = null;
  if (first) {
    const soql = SOQL.exec((call.query.get('q') ?? '').trim());
    if (!soql?.[1] || !isValidDate(soql[1])) {
      return error(
        400,
        'MALFORMED_QUERY',
        'This org answers SELECT <fields> FROM Account WHERE DAY_ONLY(CreatedDate) = <YYYY-MM-DD> only',
      );
    }
    [scope, batch, from, version] = [soql[1], askedBatch(call), 0, first[1] ?? 'v60.0'];
  } else if (more) {
    position = call.path;
    const [day, size] = Buffer.from(more[2] ?? '', 'hex')
      .toString('utf8')
      .split('|');
    if (day === undefined || !isValidDate(day) || !/^\d{1,5}$/.test(size ?? '')) {
      return error(400, 'INVALID_QUERY_LOCATOR', 'invalid query locator', { position });
    }
    [scope, batch, from, version] = [day, Number(size), Number(more[3]), more[1] ?? 'v60.0'];
  } else {
    return error(404, 'NOT_FOUND', 'The requested resource does not exist');
  }
  if (call.habit('request_limit', scope)) {
    return error(403, 'REQUEST_LIMIT_EXCEEDED', 'TotalRequests Limit exceeded.', {
      scope,
      position,
      habit: 'request_limit',
    });
  }
  const accounts = collection(salesforceApi, scope, call.count(scope));
  if (more && !(from > 0 && from < accounts.length && from % batch === 0)) {
    return error(400, 'INVALID_QUERY_LOCATOR', 'invalid query locator', { scope, position });
  }
  // The batch is fixed when the query runs (the locator carries it); the habit overrides it then.
  const server = first ? call.habit('server_batch', scope) : undefined;
  if (server) batch = server.pageSize ?? 50;
  const records = accounts.slice(from, from + batch);
  const next = from + records.length;
  const done = next >= accounts.length;
  const prefix = new URL(call.base).pathname;
  const body = {
    totalSize: accounts.length,
    done,
    ...(done
      ? {}
      : { nextRecordsUrl: `${prefix}/services/data/${version}/query/${locator(scope, batch)}-${next}` }),
    records,
  };
  return answer(200, body, {
    scope,
    position,
    records: records.length,
    ...(server ? { habit: 'server_batch' } : {}),
  });
}

/** The Salesforce imitation (see the file's header). */
export const salesforceApi: ApiDefinition<Account> = {
  name: 'salesforce',
  title: 'Salesforce SOQL query (GET /services/data/v60.0/query)',
  habits: {
    server_batch:
      'batches of pageSize (default 50) records whatever batchSize asked (set when the query runs)',
    request_limit: '403 [{errorCode: REQUEST_LIMIT_EXCEEDED}]: the daily API limit, no wait helps',
  },
  item(scope, seq) {
    const id = `001${charsOf(`salesforce|${scope}|${seq}`, 15, BASE62)}`;
    return {
      attributes: { type: 'Account', url: `/services/data/v60.0/sobjects/Account/${id}` },
      Id: id,
      Name: `Account ${scope} #${seq}`,
      CreatedDate: new Date(createdAt('salesforce', scope, seq)).toISOString().replace('Z', '+0000'),
    };
  },
  idOf: (a) => a.Id,
  serve,
};
