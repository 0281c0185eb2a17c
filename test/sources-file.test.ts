// Sources files without a database: `durable-fetch sources validate -f` (in process, with the
// database and Temporal addresses pointing at a closed port), the reading of a file's shape, the
// committed JSON Schema (it must be what `npm run schema:sources` writes) and the commands' help.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { buildProgram } from '../cli/main.ts';
import { parseSourcesFile } from '../client/sources/file.ts';
import { SOURCES_SCHEMA_FILE, sourcesSchemaText } from '../scripts/sources-schema.ts';
import { defaultJobs } from '../jobs/registry.ts';
import { detail, lines } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';

/** A port nothing listens on: one the system just gave out and took back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const check = (text: string) => parseSourcesFile(text, 'f.yaml', { jobs: defaultJobs(), maxFutureDays: 0 });
const problems = (text: string) => {
  const read = check(text);
  assert.equal(read.ok, false, 'the file is refused');
  return read.ok ? [] : read.problems;
};

describe('sources files', () => {
  let env: Record<string, string>;
  let dir: string;
  before(async () => {
    const port = await closedPort();
    env = {
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${port}/nowhere`,
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      USER: 'cli-tester',
    };
    dir = await mkdtemp(path.join(tmpdir(), 'sfile-'));
  });

  it('validate checks a YAML or JSON file without the database or Temporal', async () => {
    const good = await runCliInProcess(['sources', 'validate', '-f', 'examples/sources.yaml'], env);
    assert.deepEqual(
      [good.code, good.stdout, good.stderr],
      [0, 'ok: 3 sources, 1 downstream\n', ''],
      detail(good),
    );

    const bad = path.join(dir, 'bad.json');
    const source = { id: 'x', job: 'exchange-rates', baseUrl: 'https://x.example.test' };
    await writeFile(
      bad,
      JSON.stringify({
        sources: [
          { ...source, pageSize: 'big' },
          { ...source, schedule: { every: '1h', dateOffsetDays: 2 } },
        ],
      }),
    );
    const result = await runCliInProcess(['sources', 'validate', '-f', bad, '--json'], env);
    assert.equal(result.code, 1, detail(result));
    const expected = [
      `${bad}: sources[0].pageSize: expected an integer 1..1000`,
      `${bad}: sources[1].schedule: dateOffsetDays 2 would fetch future dates (the future-date policy allows at most 0)`,
      `${bad}: sources[1].id: duplicate id 'x' (also sources[0])`,
    ];
    assert.deepEqual(JSON.parse(result.stdout), { file: bad, ok: false, sources: 0, problems: expected });
    assert.deepEqual(lines(result.stderr), [`durable-fetch: ${bad}: 3 problems:`, ...expected]);

    // The same environment really reaches no database: apply, which needs one, says so.
    const apply = await runCliInProcess(
      ['sources', 'apply', '-f', 'examples/sources.yaml', '--dry-run'],
      env,
    );
    assert.equal(apply.code, 1, detail(apply));
    assert.match(apply.stderr, /^durable-fetch: cannot reach PostgreSQL at /);
  });

  it("a file's shape: one line per problem, with its path or its line and column", () => {
    assert.deepEqual(problems('- 1\n'), ['f.yaml: expected a mapping with a "sources" list']);
    assert.deepEqual(problems('source: []\n'), [
      'f.yaml: source: unknown key (expected: $schema, sources, downstreams)',
      'f.yaml: sources: required (a list of sources)',
    ]);
    assert.deepEqual(
      problems('sources:\n  - 7\n  - id: 5\n    job: [x]\n    baseUrl: https://x.example.test\n'),
      [
        'f.yaml: sources[0]: expected a mapping of id, baseUrl and the other settings',
        'f.yaml: sources[1].id: expected a string',
        'f.yaml: sources[1].job: expected a job type',
      ],
    );
    assert.deepEqual(problems('sources:\n  - id: a\n    id: b\n'), ['f.yaml:3:5: Map keys must be unique']);
    assert.deepEqual(problems('sources:\n  - id: a\n    baseUrl: *nowhere\n'), [
      'f.yaml: Unresolved alias (the anchor must be set before the alias): nowhere',
    ]);
    assert.match(problems('{"sources": [ {"id": "a",} ]')[0] ?? '', /^f\.yaml:1:\d+: /);
    // A JSON file may name its schema; no source at all is a valid (empty) file.
    const json = check('{"$schema": "./sources.schema.json", "sources": []}');
    assert.deepEqual(json, { ok: true, file: { file: 'f.yaml', sources: [] } });
  });

  it('sources.schema.json is what `npm run schema:sources` writes, with each job choosing its config', async () => {
    const committed = await readFile(SOURCES_SCHEMA_FILE, 'utf8');
    assert.equal(
      committed,
      sourcesSchemaText(),
      'sources.schema.json is stale: run `npm run schema:sources`',
    );
    const schema = JSON.parse(committed) as {
      properties: { sources: { items: { allOf: { if: { properties: { job: { const: string } } } }[] } } };
    };
    const chosen = schema.properties.sources.items.allOf.map((rule) => rule.if.properties.job.const);
    assert.deepEqual(chosen, [...defaultJobs().types], 'one config rule per registered job');
    const example = await readFile('examples/sources.yaml', 'utf8');
    assert.match(example, /^# yaml-language-server: \$schema=\.\.\/sources\.schema\.json$/m);
  });

  it('the help of apply and validate names their options and the file format, opening nothing', () => {
    const program = buildProgram(() => assert.fail('rendering help must not open the CLI context'));
    const sources = program.commands.find((c) => c.name() === 'sources')!;
    const help = (name: string) => {
      const command = sources.commands.find((c) => c.name() === name)!;
      let text = '';
      // outputHelp, unlike helpInformation, includes the text added after the options.
      command.configureOutput({ writeOut: (chunk) => void (text += chunk) }).outputHelp();
      return text;
    };
    const options: Record<string, string[]> = {
      apply: ['-f, --file <path>', '--dry-run', '--prune', '--json', '--by <who>', '--reason <text>'],
      validate: ['-f, --file <path>', '--json'],
    };
    for (const [name, wanted] of Object.entries(options)) {
      const text = help(name);
      for (const option of wanted) assert.ok(text.includes(option), `${name} --help mentions ${option}`);
      assert.match(text, /^ {2}# yaml-language-server: \$schema=/m, `${name} --help shows the file`);
      assert.match(text, new RegExp(`^Examples?:\\n {2}durable-fetch sources ${name} -f `, 'm'));
    }
    assert.match(sources.helpInformation(), /^\s+apply \[options\]/m);
    assert.match(sources.helpInformation(), /^\s+validate \[options\]/m);
  });
});
