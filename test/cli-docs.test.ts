// README.md and docs/quick-start.md are read in a checkout of this repository: every way they call
// `durable-fetch` must be one the checkout provides (there is no node_modules/.bin/durable-fetch in
// it: the package is the checkout itself). Each form they write is run for real, with each command
// they give it and `--help`, and the output must be durable-fetch's own: npx keeps `--help`, `-h` and
// `--version` for itself right after the command's name, so `npx durable-fetch --help` prints npm's.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { buildProgram } from '../cli/main.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';

/** The pages written for a checkout (docs/cli.md also covers a project that installed the package). */
const CHECKOUT_DOCS = ['README.md', 'docs/quick-start.md'];

/** The forms that run the checkout's own command, as the docs write them → their argv. */
const FORMS: Readonly<Record<string, readonly string[]>> = {
  'npx durable-fetch': ['npx', 'durable-fetch'],
  'npx -- durable-fetch': ['npx', '--', 'durable-fetch'],
  'npm run cli --': ['npm', 'run', 'cli', '--'],
  'node bin/durable-fetch.js': [process.execPath, 'bin/durable-fetch.js'],
};

/** A call of the command: any form, the known ones and those that do not belong in a checkout. */
const CALL =
  /(npx(?: --)? durable-fetch|npm run cli --|node (?:\.\/)?bin\/durable-fetch\.js|[\w./-]*node_modules\/\.bin\/durable-fetch)([^`\n#)]*)/g;

interface Call {
  doc: string;
  form: string;
  /** What follows the form, up to a placeholder (`…`, `<id>`) or a comment. */
  args: string[];
}

async function calls(): Promise<Call[]> {
  const found: Call[] = [];
  for (const doc of CHECKOUT_DOCS) {
    const text = await readFile(path.join(PROJECT_ROOT, doc), 'utf8');
    for (const [, form = '', rest = ''] of text.matchAll(CALL)) {
      const words = rest.trim().split(/\s+/).filter(Boolean);
      const end = words.findIndex((w) => w.includes('…') || w.startsWith('<'));
      found.push({ doc, form, args: end < 0 ? words : words.slice(0, end) });
    }
  }
  return found;
}

function run(argv: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [file = '', ...args] = argv;
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        cwd: PROJECT_ROOT,
        timeout: 60_000,
        encoding: 'utf8',
        // From scratch: help reads no configuration, and npx may never install anything.
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NO_COLOR: '1',
          npm_config_yes: 'false',
          DATABASE_URL: 'mysql://nope',
        },
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

test('cli docs: every form README and quick-start use to call durable-fetch works in the checkout', async () => {
  const found = await calls();
  assert.ok(
    found.some((c) => c.doc === 'README.md'),
    'README calls the CLI',
  );
  const unknown = found.filter((c) => !(c.form in FORMS)).map((c) => `${c.doc}: ${c.form}`);
  assert.deepEqual(unknown, [], 'forms the checkout does not provide');
  const version = (
    JSON.parse(await readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }
  ).version;
  // Every command they give exists (checked in process, cheaply)…
  const program = buildProgram(() => assert.fail('no command runs here'));
  const commands = new Set([...program.commands.map((c) => c.name()), 'help']);
  const options = ['--help', '-h', '--version', '-V'];
  for (const { doc, form, args } of found) {
    const [first] = args;
    if (first === undefined) continue;
    assert.ok(commands.has(first) || options.includes(first), `${doc}: ${form} ${first}: no such command`);
    if (form === 'npx durable-fetch') {
      assert.ok(!options.includes(first), `${doc}: npx takes ${first} after the command's name as its own`);
    }
  }
  // …and each form reaches the checkout's command for real: one call per form, the first the docs
  // write with it (`<form> <command> --help`, `help`, or a top-level option as written).
  const checks = new Map<string, { argv: string[]; expect: RegExp }>();
  const usage = /^Usage: durable-fetch \[options\] \[command\]/m;
  for (const { form, args } of found) {
    if (checks.has(form)) continue;
    const [first] = args;
    const tail =
      first === undefined || first === 'help'
        ? { args: ['help'], expect: usage }
        : first.startsWith('-')
          ? {
              args: [first],
              expect: ['--version', '-V'].includes(first)
                ? new RegExp(`^${version.replaceAll('.', '\\.')}\\n$`)
                : usage,
            }
          : { args: [first, '--help'], expect: new RegExp(`^Usage: durable-fetch ${first} `, 'm') };
    checks.set(form, { argv: [...FORMS[form]!, ...tail.args], expect: tail.expect });
  }
  const results = await Promise.all(
    [...checks.values()].map(async ({ argv, expect }) => ({
      name: argv.join(' '),
      expect,
      result: await run(argv),
    })),
  );
  for (const { name, expect, result } of results) {
    const detail = `${name}: exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
    assert.equal(result.code, 0, detail);
    assert.match(result.stdout, expect, detail);
  }
});
