/**
 * fast-check arbitraries of what a start that bypasses the client, or a partner, may send: wrong
 * types, huge strings, deep nesting, unicode, NUL bytes, ids over the limit, SQL-looking ids,
 * duplicate ids, missing fields. Used by the input property test (test/input-properties.e2e.test.ts).
 */
import fc from 'fast-check';
import { REQUESTED_BY } from '../../contract/types.ts';

/** Strings that have broken real systems: SQL, NUL bytes, path and template tricks. */
const NASTY = [
  "'; DROP TABLE fetch_run; --",
  "x' OR '1'='1",
  '\u0000',
  'a\u0000b',
  '${jndi:ldap://x}',
  '../../etc/passwd',
  '\u202eevil',
  '\ud83d\ude00',
  '\ufeff',
] as const;

/** Nested arrays `depth` deep around `leaf`. */
export function nested(depth: number, leaf: unknown = 'deep'): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** A string a careless consumer chokes on: unicode, lone surrogates, NUL, SQL, or up to `max` long. */
export const hostileStringOf = (max: number) =>
  fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.constantFrom(...NASTY),
    fc.integer({ min: 200, max }).map((n) => 'x'.repeat(n)),
  );

/** Any value of a wrong type, nested too deep, or a string up to `max` long. */
export const hostileValueOf = (max: number) =>
  fc.oneof(
    hostileStringOf(max),
    fc.integer({ min: 1, max: 400 }).map((d) => nested(d)),
    fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null)),
    fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
    fc.object({ maxDepth: 2 }),
  );

/** Inputs stay well under Temporal's 2 MB payload limit, pages under the partner fault's 1 MB. */
const hostileValue = hostileValueOf(100_000);
const hostileField = hostileValueOf(3_000);

/** A field of a workflow input: mostly its valid value, else a near miss, a hostile value, or gone. */
function field<T>(valid: fc.Arbitrary<T>, nearMiss: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 20, arbitrary: valid },
    { weight: 1, arbitrary: nearMiss },
    { weight: 1, arbitrary: hostileValue },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/** One case of the input property: a workflow id and the input started under it. */
export interface InputCase {
  workflowId: string;
  input: unknown;
}

/**
 * Workflow inputs for the key `fetch/fetch-records/<sourceId>/<date>`, each field valid or not on
 * its own, sometimes under a workflow id of another key, of none, or a whole input of a wrong type.
 */
export function inputCase(sourceId: string, date: string): fc.Arbitrary<InputCase> {
  const keyId = `fetch/fetch-records/${sourceId}/${date}`;
  const input = fc
    .record({
      jobType: field(fc.constant('fetch-records'), fc.constantFrom('http', 'Fetch-Records', '')),
      sourceId: field(fc.constant(sourceId), fc.constantFrom(`${sourceId}-other`, 'a'.repeat(64), 'A')),
      businessDate: field(fc.constant(date), fc.constantFrom('2026-13-01', '2026-02-30', '06/06/2026')),
      correlationId: field(
        fc.constantFrom('c-1', 'k'.repeat(128), 'trace:0af7651916cd43dd8448eb211c80319c'),
        fc.constantFrom('k'.repeat(129), 'has space', ''),
      ),
      requestedBy: field(fc.constantFrom(...REQUESTED_BY), fc.constantFrom('CLI', 'admin', 'web-ui')),
      scheduledAt: field(
        fc.constantFrom(undefined, '2026-06-06T02:00:00Z', '2026-06-06T04:00:00.123+02:00'),
        fc.constantFrom('2026-06-06', '2026-06-06T25:00:00Z', 'yesterday'),
      ),
      pageSize: field(fc.constantFrom(undefined, 1, 5, 1000), fc.constantFrom(0, -1, 1001, 2.5, 1e9, '5')),
      pagesPerExecution: field(fc.constantFrom(undefined, 1, 2, 1000), fc.constantFrom(0, 1001, 'abc', NaN)),
      resume: fc.oneof(
        { weight: 14, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: hostileValue },
      ),
      extra: fc.oneof(
        { weight: 14, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: hostileValue },
      ),
    })
    .map((fields) => Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)));
  return fc.record({
    workflowId: fc.oneof(
      { weight: 14, arbitrary: fc.constant(keyId) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(`fetch/fetch-records/${sourceId}-other/${date}`, `x-${sourceId}`),
      },
    ),
    input: fc.oneof({ weight: 14, arbitrary: input }, { weight: 1, arbitrary: hostileValue }),
  });
}

/** A record id: well-formed, from a small pool (duplicates), unicode, SQL-looking, or broken. */
const recordId = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z0-9-]{1,12}$/) },
  { weight: 2, arbitrary: fc.constantFrom('dup-1', 'dup-2') },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom("r'; DROP TABLE fetched_record; --", 'a\u0000b', 'i'.repeat(201)) },
  { weight: 1, arbitrary: fc.constantFrom('', 42, null, ['r']) },
);

/** A partner record: an id (or none) and extra fields of any shape. */
const record = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .record({
        id: recordId,
        extra: fc.dictionary(
          fc.string({ maxLength: 8 }),
          fc.oneof(fc.jsonValue({ maxDepth: 3 }), hostileField),
          {
            maxKeys: 3,
          },
        ),
      })
      .map(({ id, extra }) => ({ ...extra, id })),
  },
  { weight: 1, arbitrary: fc.record({ name: hostileStringOf(3_000) }) },
  { weight: 1, arbitrary: hostileField },
);

/** A partner page: usually `{records, nextCursor}` with hostile parts, sometimes no page at all. */
export const partnerPage: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      records: fc.array(record, { maxLength: 8 }),
      nextCursor: fc.oneof(
        { weight: 8, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: hostileField },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ records: fc.array(record, { maxLength: 3 }) }) },
  { weight: 1, arbitrary: hostileField },
);
