/**
 * Records the workflow histories the replay gate replays (test/workflow-replay.test.ts; see
 * docs/versioning.md). Brings up the real services as `npm test` does (a Temporal dev server and a
 * migrated PostgreSQL), the project's own worker on a fresh task queue and the demo partner, runs
 * every scenario of scripts/history-scenarios.ts for real, and writes one JSON file per closed
 * workflow execution to test/histories/.
 *
 * Existing fixtures are kept unless `--overwrite` is given: the gate's worth is in histories that
 * older code wrote. Fails, writing nothing, when a history holds a credential or misses what its
 * fixture must show.
 *
 *   npx tsx scripts/record-histories.ts [--only <scenario...>] [--out <dir>] [--overwrite]
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { Command } from 'commander';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { testDeps } from '../test/helpers/deps.ts';
import { historyToJson } from '../test/helpers/history-json.ts';
import {
  EXPECTED_FIXTURES,
  HISTORIES_DIR,
  type HistoryFixture,
  PLANTED_SECRET,
  PLANTED_SECRET_REF,
  searchableTexts,
} from '../test/helpers/history-fixtures.ts';
import { startTestServices, type TestServices } from '../test/helpers/services.ts';
import { testClient, testWorker } from '../test/helpers/temporal.ts';
import { SECRET_REF_PREFIX } from '../activities/create-deps.ts';
import { createTokenProvider } from '../activities/credentials/token-provider.ts';
import { HISTORY_CREDENTIALS_KEY } from './history-scenario-steps.ts';
import { DEFAULT_RECORDS, type Execution, RECORDS, SCENARIOS } from './history-scenarios.ts';

const say = (line: string) => console.error(`[record-histories] ${line}`);
const CLOSED =
  /^EVENT_TYPE_WORKFLOW_EXECUTION_(COMPLETED|FAILED|CANCELED|TERMINATED|TIMED_OUT|CONTINUED_AS_NEW)$/;
/** Executions of one continued run followed at most (the scenarios make three). */
const MAX_CHAIN = 20;

interface Options {
  only?: string[];
  out: string;
  overwrite: boolean;
}

function parseArgs(argv: string[]): Options {
  const program = new Command('record-histories')
    .description(
      'Run the replay gate’s scenarios on real services and write each closed workflow execution’s ' +
        'history to test/histories/ (one JSON file each). Existing files are kept unless --overwrite.\n' +
        `Scenarios: ${SCENARIOS.map((s) => s.name).join(', ')}.`,
    )
    .option('--only <scenario...>', 'run only these scenarios')
    .option('--out <dir>', 'where to write the fixtures', HISTORIES_DIR)
    .option('--overwrite', 'replace fixtures that exist (see docs/versioning.md before you do)', false)
    .showHelpAfterError();
  program.parse(argv);
  const options = program.opts<Options>();
  const unknown = (options.only ?? []).filter((name) => !SCENARIOS.some((s) => s.name === name));
  if (unknown.length > 0) program.error(`unknown scenario(s): ${unknown.join(', ')}`);
  return options;
}

/** The history of `e` and of every execution it continued as, in order; each must be closed. */
async function histories(client: Client, e: Execution): Promise<[string, HistoryFixture][]> {
  const found: { runId: string; history: HistoryFixture['history'] }[] = [];
  let runId: string | undefined = e.runId;
  while (runId !== undefined && found.length < MAX_CHAIN) {
    const history = await client.workflow.getHandle(e.workflowId, runId).fetchHistory();
    const json = JSON.parse(historyToJson(history)) as HistoryFixture['history'];
    const last = json.events.at(-1)?.eventType ?? '';
    if (!CLOSED.test(last))
      throw new Error(`${e.name}: ${e.workflowId} run ${runId} is not closed (${last})`);
    found.push({ runId, history: json });
    runId =
      history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return found.map((f, i) => {
    const name = found.length > 1 ? `${e.name}-${i + 1}.json` : `${e.name}.json`;
    const started = f.history.events[0]?.workflowExecutionStartedEventAttributes as
      { workflowType?: { name?: string } } | undefined;
    const workflowType = started?.workflowType?.name ?? '?';
    return [name, { workflowId: e.workflowId, runId: f.runId, workflowType, history: f.history }];
  });
}

/** Every problem with the recorded fixtures: a credential in one, or one that misses its point. */
function problemsOf(recorded: Map<string, string>, secrets: string[]): string[] {
  const problems: string[] = [];
  for (const [file, text] of recorded) {
    const texts = searchableTexts(text);
    if (secrets.some((secret) => texts.some((t) => t.includes(secret))))
      problems.push(`${file}: holds a DF_SECRET_* value`);
    const expected = EXPECTED_FIXTURES.find((f) => f.file === file);
    const fixture = JSON.parse(text) as HistoryFixture;
    if (!expected) problems.push(`${file}: not in EXPECTED_FIXTURES (test/helpers/history-fixtures.ts)`);
    else if (fixture.workflowType !== expected.workflowType)
      problems.push(`${file}: a ${fixture.workflowType}, expected a ${expected.workflowType}`);
    else if (!expected.check(fixture.history.events))
      problems.push(`${file}: does not show ${expected.shows}`);
  }
  return problems;
}

async function main(options: Options): Promise<number> {
  const started = Date.now();
  const scenarios = SCENARIOS.filter((s) => !options.only || options.only.includes(s.name));
  let services: TestServices | undefined;
  const stops: (() => Promise<unknown>)[] = [];
  try {
    services = await startTestServices(say);
    Object.assign(process.env, services.env);
    const db = await useTestDatabase();
    stops.push(() => db.drop());
    const partner = await startPartner({ port: 0, recordCount: (id) => RECORDS[id] ?? DEFAULT_RECORDS });
    stops.push(() => partner.close());
    const client = await testClient();
    stops.push(() => client.connection.close());
    const secret = (ref: string) => (ref === PLANTED_SECRET_REF ? PLANTED_SECRET : process.env[ref]);
    // Polling the downstreams' queues too: a scenario's isolated downstream fetches there.
    // OAuth2 tokens too: a scenario's source uses a credential sealed with the recording's key.
    const tokens = createTokenProvider({ prisma: db.prisma, key: HISTORY_CREDENTIALS_KEY, secret });
    const worker = await testWorker(testDeps(db.prisma, { secret, tokens }), { downstreams: true });
    const ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue };

    const recorded = new Map<string, string>();
    await worker.run(async () => {
      for (const scenario of scenarios) {
        const t0 = Date.now();
        const executions = await scenario.run({ ctx, client, partner, database: db.name });
        for (const e of executions) {
          for (const [file, fixture] of await histories(client, e))
            recorded.set(file, `${JSON.stringify(fixture, null, 1)}\n`);
        }
        say(
          `${scenario.name}: ${executions.length} workflow(s) in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
        );
      }
    });

    const secrets = [
      PLANTED_SECRET,
      ...Object.entries(process.env)
        .filter(([name, value]) => name.startsWith(SECRET_REF_PREFIX) && value)
        .map(([, value]) => value as string),
    ];
    const problems = problemsOf(recorded, secrets);
    if (problems.length > 0) {
      for (const p of problems) say(`FAILED ${p}`);
      say('nothing written');
      return 1;
    }
    await mkdir(options.out, { recursive: true });
    let bytes = 0;
    for (const [file, text] of recorded) {
      const target = path.join(options.out, file);
      if (existsSync(target) && !options.overwrite) {
        say(`kept     ${file} (exists; --overwrite replaces it)`);
        continue;
      }
      await writeFile(target, text);
      bytes += Buffer.byteLength(text);
      say(`wrote    ${file} (${(Buffer.byteLength(text) / 1024).toFixed(1)} KiB)`);
    }
    say(
      `${recorded.size} histories, ${(bytes / 1024).toFixed(0)} KiB written, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    return 0;
  } finally {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => say(`cleanup: ${String(err)}`));
    await services?.stop();
  }
}

try {
  process.exitCode = await main(parseArgs(process.argv));
} catch (err) {
  say(`FAILED ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
}
