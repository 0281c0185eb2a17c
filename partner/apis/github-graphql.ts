// GitHub GraphQL API: `POST /graphql`, a repository's issues with one label, as a connection.
// Facts from GitHub's GraphQL documentation ("Using pagination in the GraphQL API", "Rate limits
// and query limits for the GraphQL API", "Forming calls"), each a habit here:
// - a connection takes `first` (1..100, required) and `after`, and answers `nodes` (or `edges`
//   of `{ cursor, node }`) with `pageInfo { endCursor hasNextPage }`; `totalCount` counts them all;
// - errors come inside an HTTP 200 as a top-level `errors` array, next to `data` (null, or partly
//   filled): a `first` over 100 (`EXCESSIVE_PAGINATION`), an unknown repository (`NOT_FOUND`), a
//   query that timed out (habit `query_timeout`: "Something went wrong while executing your
//   query. This may be the result of a timeout…");
// - over the primary rate limit, the answer is still a 200, with an error of type `RATE_LIMITED`
//   (at the error's top level, not in `extensions`) and `x-ratelimit-remaining: 0`; the reset is
//   `x-ratelimit-reset`, an epoch second (habit `rate_limited`);
// - a wrong token is HTTP 401 `{ "message": "Bad credentials" }`.
// The imitation reads the operation's `variables` (`owner`, `name`, `labels`, `first`, `after`),
// not its text beyond checking that it asks for `repository` and `issues`: the variables must
// carry every value. It holds repository `acme/ledger`; label `<date>` marks that day's issues.
import { githubRateHeaders } from './github-rest.ts';
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
  decodeToken,
  encodeToken,
  waitOf,
} from './kit.ts';
import { isValidDate } from '../records.ts';

interface Issue {
  id: string;
  number: number;
  title: string;
  createdAt: string;
}

const MAX_FIRST = 100;
const REPOSITORY = { owner: 'acme', name: 'ledger' };

const rateHeaders = (remaining: number, resetS?: number) => githubRateHeaders('graphql', remaining, resetS);

/** A 200 carrying GraphQL errors (and `data` when the query got that far). */
function graphqlErrors(
  errors: Record<string, unknown>[],
  extras: Partial<ApiAnswer> = {},
  data: unknown = null,
): ApiAnswer {
  return answer(200, { data, errors }, { headers: rateHeaders(4990), ...extras });
}

function serve(call: ApiCall): ApiAnswer {
  if (call.path !== '/graphql' || call.method !== 'POST') {
    return answer(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/graphql' });
  }
  const token = bearerOf(call.headers);
  if (token === undefined || !secretEquals(token, call.token)) {
    const message =
      token === undefined ? 'This endpoint requires you to be authenticated.' : 'Bad credentials';
    return answer(
      401,
      { message, documentation_url: 'https://docs.github.com/graphql' },
      { authorized: false },
    );
  }
  const body = (call.body ?? {}) as { query?: unknown; variables?: unknown };
  if (
    typeof body.query !== 'string' ||
    !/\brepository\s*\(/.test(body.query) ||
    !/\bissues\s*\(/.test(body.query)
  ) {
    return graphqlErrors([
      { message: 'A query attribute must be specified and must ask for repository { issues }.' },
    ]);
  }
  const vars = (
    typeof body.variables === 'object' && body.variables !== null ? body.variables : {}
  ) as Record<string, unknown>;
  const after = typeof vars.after === 'string' ? vars.after : null;
  const position = after;
  if (vars.owner !== REPOSITORY.owner || vars.name !== REPOSITORY.name) {
    const name = `${String(vars.owner)}/${String(vars.name)}`;
    return graphqlErrors(
      [
        {
          type: 'NOT_FOUND',
          path: ['repository'],
          message: `Could not resolve to a Repository with the name '${name}'.`,
        },
      ],
      { position },
      { repository: null },
    );
  }
  const labels = Array.isArray(vars.labels) ? (vars.labels as unknown[]) : [vars.labels];
  const scope =
    labels.length === 1 && typeof labels[0] === 'string' && isValidDate(labels[0]) ? labels[0] : undefined;
  if (scope === undefined) {
    return graphqlErrors(
      [
        {
          path: ['repository', 'issues'],
          message: 'This repository answers issues(labels: ["<YYYY-MM-DD>"]): one label, a date.',
        },
      ],
      { position },
    );
  }
  const limited = call.habit('rate_limited', scope);
  if (limited) {
    return answer(
      200,
      { errors: [{ type: 'RATE_LIMITED', message: 'API rate limit exceeded for user ID 583231.' }] },
      { scope, position, habit: 'rate_limited', headers: rateHeaders(0, waitOf(limited)) },
    );
  }
  if (call.habit('query_timeout', scope)) {
    const message =
      'Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug. Please include `C1D2:4E5F:1A2B3C:4D5E6F:6512A0B1` when reporting this issue.';
    return graphqlErrors([{ message }], { scope, position, habit: 'query_timeout' });
  }
  const first = vars.first;
  if (typeof first !== 'number' || !Number.isInteger(first) || first < 1) {
    return graphqlErrors(
      [
        {
          type: 'MISSING_PAGINATION_BOUNDARIES',
          path: ['repository', 'issues'],
          message: 'You must provide a `first` or `last` value to properly paginate the `issues` connection.',
        },
      ],
      { scope, position },
    );
  }
  if (first > MAX_FIRST) {
    return graphqlErrors(
      [
        {
          type: 'EXCESSIVE_PAGINATION',
          path: ['repository', 'issues'],
          message: `Requesting ${first} records on the \`issues\` connection exceeds the \`first\` limit of ${MAX_FIRST} records.`,
        },
      ],
      { scope, position },
    );
  }
  const issues = collection(githubGraphqlApi, scope, call.count(scope));
  // A cursor names the position after its issue: `after: endCursor` continues past the page.
  const from = after === null ? 0 : decodeToken('github-graphql', scope, after, issues.length);
  if (from === undefined) {
    return graphqlErrors(
      [
        {
          type: 'INVALID_CURSOR_ARGUMENTS',
          path: ['repository', 'issues'],
          message: `\`${after}\` does not appear to be a valid cursor.`,
        },
      ],
      { scope, position },
    );
  }
  const page = issues.slice(from, from + first);
  const cursorAt = (i: number) => encodeToken('github-graphql', scope, from + i + 1);
  const connection: Record<string, unknown> = {
    totalCount: issues.length,
    pageInfo: {
      endCursor: page.length > 0 ? cursorAt(page.length - 1) : null,
      hasNextPage: from + page.length < issues.length,
    },
  };
  if (/\bnodes\b/.test(body.query)) connection.nodes = page;
  if (/\bedges\b/.test(body.query)) connection.edges = page.map((node, i) => ({ cursor: cursorAt(i), node }));
  return answer(
    200,
    { data: { repository: { issues: connection } } },
    { scope, position, records: page.length, headers: rateHeaders(4990) },
  );
}

/** The GitHub GraphQL imitation (see the file's header). */
export const githubGraphqlApi: ApiDefinition<Issue> = {
  name: 'github-graphql',
  title: 'GitHub GraphQL connection (POST /graphql, repository.issues)',
  habits: {
    rate_limited:
      'HTTP 200 with errors[{type: RATE_LIMITED}], x-ratelimit-remaining 0, reset in waitS (default 1)',
    query_timeout: 'HTTP 200 with data null and errors[{message: "Something went wrong… timeout…"}]',
  },
  item(scope, seq) {
    return {
      id: `I_kwDO${charsOf(`github-graphql|${scope}|${seq}`, 16, BASE62)}`,
      number: seq,
      title: `Ledger ${scope} #${seq}`,
      createdAt: new Date(createdAt('github-graphql', scope, seq)).toISOString().replace('.000Z', 'Z'),
    };
  },
  idOf: (i) => i.id,
  serve,
};
