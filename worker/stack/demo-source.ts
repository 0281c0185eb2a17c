/**
 * The demo's sources, as `npm start` sets them up: whatever `examples/sources.yaml` says — one
 * source per job, the declarative `http` one included — applied the way `durable-fetch sources
 * apply -f` does (audited, schedules synced), so a newcomer sees the file format working and
 * changes the demo by editing the file.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { parse } from 'yaml';
import { type ApplyReport, applySources } from '../../client/sources/apply.ts';
import { fileProblemsError, parseSourcesFile } from '../../client/sources/file.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import type { PrismaClient } from '../../db/client.ts';

export const DEMO_SOURCE_ID = 'demo';
/** The second demo source: the exchange-rates job (its own table, journal entries downstream). */
export const DEMO_FX_SOURCE_ID = 'demo-fx';
/** The third: the declarative `http` job, reading the demo partner's catalog by configuration only. */
export const DEMO_CATALOG_SOURCE_ID = 'demo-catalog';
/** The example sources file `npm start` applies. */
export const DEMO_SOURCES_FILE = fileURLToPath(new URL('../../examples/sources.yaml', import.meta.url));
/** The partner URL the example file names: the demo partner's default address. */
export const EXAMPLE_PARTNER_URL = 'http://127.0.0.1:4010';

/**
 * Applies the example sources file, its partner URL replaced by where the demo partner runs
 * (`PARTNER_HOST`/`PARTNER_PORT`). A second start over the same database changes nothing.
 * @throws UserFacingError INVALID_INPUT for a file with problems (one line each; nothing changed),
 *   and whatever `sources apply` refuses.
 */
export async function applyDemoSources(
  ctx: { prisma: PrismaClient; temporal: Client; taskQueue: string; maxFutureDays: number },
  partnerUrl: string,
): Promise<ApplyReport> {
  const jobs = defaultJobs();
  const text = (await readFile(DEMO_SOURCES_FILE, 'utf8')).replaceAll(EXAMPLE_PARTNER_URL, partnerUrl);
  const name = path.relative(process.cwd(), DEMO_SOURCES_FILE);
  const read = parseSourcesFile(text, name, { jobs, maxFutureDays: ctx.maxFutureDays });
  if (!read.ok) throw fileProblemsError(name, read.problems, 'nothing was changed');
  return applySources(
    {
      prisma: ctx.prisma,
      temporal: () => Promise.resolve(ctx.temporal),
      taskQueue: ctx.taskQueue,
      jobs,
      maxFutureDays: ctx.maxFutureDays,
    },
    read.file,
    { actor: 'npm-start', reason: `npm start: ${name}` },
  );
}

/**
 * The tokens `npm start` starts the demo partner with when the environment names none: demo-only
 * values of the local demo partner, by the demo source that sends them (its exchange-rates API,
 * its catalog API).
 */
const LOCAL_TOKENS = {
  [DEMO_FX_SOURCE_ID]: 'demo-fx-local-token',
  [DEMO_CATALOG_SOURCE_ID]: 'demo-catalog-local-token',
} as const;

/** The token a demo source sends the demo partner, under the name the source reads it from. */
export interface DemoToken {
  sourceId: string;
  /** The source's `credentialsRef` in examples/sources.yaml, e.g. `DF_SECRET_DEMO_FX`. */
  ref: string;
  /** The token the demo partner is started with. */
  token: string;
  /** True when `token` is the environment's own value (then never printed). */
  fromEnv: boolean;
}

/**
 * The demo partner's tokens, as the demo sources of examples/sources.yaml reference them: each
 * source's `credentialsRef` (read from the file, so the names are written once), holding the
 * environment's value when it has one, else the local demo token.
 * @throws Error when the file gives a demo source with a partner token no credentials reference.
 */
export async function demoTokens(
  env: Record<string, string | undefined> = process.env,
): Promise<{ rates: DemoToken; catalog: DemoToken }> {
  const doc = parse(await readFile(DEMO_SOURCES_FILE, 'utf8')) as {
    sources?: { id?: unknown; credentialsRef?: unknown }[];
  };
  const token = (sourceId: keyof typeof LOCAL_TOKENS): DemoToken => {
    const ref = doc.sources?.find((s) => s.id === sourceId)?.credentialsRef;
    if (typeof ref !== 'string') {
      throw new Error(`${DEMO_SOURCES_FILE}: the source '${sourceId}' names no credentialsRef`);
    }
    const own = env[ref];
    return { sourceId, ref, token: own ?? LOCAL_TOKENS[sourceId], fromEnv: own !== undefined };
  };
  return { rates: token(DEMO_FX_SOURCE_ID), catalog: token(DEMO_CATALOG_SOURCE_ID) };
}

/** The demo partner's options that take the tokens (`startPartner`). */
export function demoPartnerTokens(tokens: { rates: DemoToken; catalog: DemoToken }): {
  ratesToken: string;
  catalogToken: string;
} {
  return { ratesToken: tokens.rates.token, catalogToken: tokens.catalog.token };
}

/**
 * What `npm start` prints for an operator's other shell (`durable-fetch sources try demo-fx`):
 * `export NAME=value` per demo token. A value the environment gave is not printed: it may be a
 * credential of the operator's own; only the local demo tokens are.
 */
export function demoTokenLines(tokens: { rates: DemoToken; catalog: DemoToken }): string[] {
  return [tokens.rates, tokens.catalog].map((t) =>
    t.fromEnv
      ? `${t.ref} is set in this environment: the demo partner takes its value (not printed here)`
      : `export ${t.ref}=${t.token}`,
  );
}
