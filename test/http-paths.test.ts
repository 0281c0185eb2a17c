// Paths into a partner's body (jobs/http/path.ts), pure: one parser, strict, and what a config
// accepts is what a run reads. The property tests generate paths from their segments — keys with
// dots, `@`, `$`, quotes, spaces, brackets, indices from either end — and check that the text form
// parses back to the same segments, that a validated config holds those segments (and validates
// again as itself), and that reading the path in a body built from it finds the value planted there.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { httpJobConfigSchema } from '../jobs/http/config.ts';
import {
  dottedKeyHint,
  formatPath,
  parsePath,
  type Path,
  PathSyntaxError,
  readPath,
  type Segment,
} from '../jobs/http/path.ts';

/** Keys as partners write them: bare names, and names only brackets can say. */
const key = fc.oneof(
  fc.stringMatching(/^[A-Za-z_$@-][A-Za-z0-9_$@-]{0,12}$/),
  fc.constantFrom(
    '@odata.nextLink',
    '@odata.count',
    'next cursor',
    "it's",
    'a"b',
    'x\\y',
    '$',
    '[0]',
    'a.b.c',
    '0',
    '01',
    '-1',
  ),
  fc.string({ minLength: 1, maxLength: 12 }),
);
const index = fc.integer({ min: -5, max: 5 });
const segments = fc.array(fc.oneof({ arbitrary: key, weight: 3 }, { arbitrary: index, weight: 1 }), {
  minLength: 1,
  maxLength: 6,
});

/** A body in which `path` leads to `value` (arrays of `index`-reachable length, padded with noise). */
function bodyFor(path: Path, value: unknown): unknown {
  let inner = value;
  for (const segment of [...path].reverse()) {
    if (typeof segment === 'number') {
      const length = Math.abs(segment) + 2;
      const list: unknown[] = Array.from({ length }, (_, i) => ({ noise: i }));
      list[segment < 0 ? length + segment : segment] = inner;
      inner = list;
    } else {
      inner = { [`${segment}~noise`]: 1, [segment]: inner };
    }
  }
  return inner;
}

const configWithPath = (path: unknown) =>
  httpJobConfigSchema.safeParse({
    request: { path: '/items' },
    pagination: { type: 'cursor', path, hasMorePath: path },
  });

describe('http job paths', () => {
  test('the grammar: dotted names, indices from either end, bracket keys, the JSONPath root', () => {
    const cases: [string, Segment[]][] = [
      ['data', ['data']],
      ['meta.next_cursor', ['meta', 'next_cursor']],
      ['items[0].id', ['items', 0, 'id']],
      ['data[-1].id', ['data', -1, 'id']],
      ["['@odata.nextLink']", ['@odata.nextLink']],
      ['meta["next cursor"]', ['meta', 'next cursor']],
      ["a['it\\'s']", ['a', "it's"]],
      ['$.data.items', ['data', 'items']],
      ["$['@odata.count']", ['@odata.count']],
      ['@odata.nextLink', ['@odata', 'nextLink']],
      ['$count', ['$count']],
      ['page-info.has_more', ['page-info', 'has_more']],
      // A bare integer is an index, however it is written; a quoted one is a key.
      ['items.0.id', ['items', 0, 'id']],
      ['data.-1.id', ['data', -1, 'id']],
      ["a['0']", ['a', '0']],
    ];
    for (const [text, expected] of cases) assert.deepEqual(parsePath(text), expected, text);
  });

  test('anything else is refused with where and why, never read some other way', () => {
    for (const text of [
      '',
      'a..b',
      'a.',
      '.a',
      'a b',
      "a['b",
      'a[b]',
      'a[01]',
      'a[-0]',
      'a[1',
      'a]',
      "a['b'c']",
      "a['\\n']",
      '$',
      '$.',
      'a.[0]',
      "['']",
      'a.01',
    ]) {
      if (text === '$') {
        assert.deepEqual(parsePath(text), ['$'], 'a lone $ is a key');
        continue;
      }
      assert.throws(() => parsePath(text), PathSyntaxError, `'${text}' refused`);
    }
    assert.throws(() => parsePath('meta..next'), /at character 6/);
  });

  test('property: every path written as text parses back to its segments', () => {
    fc.assert(
      fc.property(segments, (path) => {
        assert.deepEqual(parsePath(formatPath(path)), path);
      }),
      { numRuns: 2000 },
    );
  });

  test('property: a validated config holds the parsed path, validates again as itself, and reads what it says', () => {
    fc.assert(
      fc.property(segments, fc.boolean(), fc.string(), (path, asText, value) => {
        const first = configWithPath(asText ? formatPath(path) : path);
        assert.ok(first.success, JSON.stringify(first.error?.issues));
        const held = first.data.pagination;
        assert.ok(held.type === 'cursor');
        assert.deepEqual(held.path, path, 'the config holds the segments the text says');
        const again = configWithPath(held.path);
        assert.ok(again.success);
        assert.deepEqual(again.data.pagination, held, 'the stored form validates as itself');
        const read = readPath(bodyFor(path, value), held.path);
        assert.deepEqual(read, { found: true, value });
      }),
      { numRuns: 1000 },
    );
  });

  test('reading: own members only, indices in range, and what was there when it stops', () => {
    assert.deepEqual(readPath({ a: {} }, ['a', 'constructor']), { found: false, reached: 1, keys: [] });
    assert.deepEqual(readPath({ a: [1, 2] }, ['a', -3]), { found: false, reached: 1, keys: ['[2 items]'] });
    assert.deepEqual(readPath({ a: [1, 2] }, ['a', 1]), { found: true, value: 2 });
    assert.equal(readPath({ a: [1, 2] }, ['a', '1']).found, false, "['1'] names a member, never an index");
    assert.deepEqual(readPath({ a: { '1': 'x' } }, ['a', '1']), { found: true, value: 'x' });
    assert.deepEqual(readPath({ a: null }, ['a', 'b']), { found: false, reached: 1, keys: [] });
    const read = readPath({ value: [], '@odata.nextLink': 'x' }, ['@odata', 'nextLink']);
    assert.equal(dottedKeyHint(read, ['@odata', 'nextLink']), "['@odata.nextLink']");
  });
});
