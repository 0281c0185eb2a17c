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
import { type ApplyReport, applySources } from '../../client/sources/apply.ts';
import { fileProblemsError, parseSourcesFile } from '../../client/sources/file.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import type { PrismaClient } from '../../db/client.ts';

export const DEMO_SOURCE_ID = 'demo';
/** The second demo source: the exchange-rates job (its own table, journal entries downstream). */
export const DEMO_FX_SOURCE_ID = 'demo-fx';
/** The third: the declarative `http` job, reading the demo partner's catalog by configuration only. */
export const DEMO_CATALOG_SOURCE_ID = 'demo-catalog';
/** The demo-fx source's credentials reference; `npm start` gives it a local token when unset. */
export const DEMO_FX_SECRET_REF = 'DF_SECRET_DEMO_FX';
/**
 * The credentials reference of the demo partner's catalog API (`/catalog/:auth/…`); `npm start`
 * gives it a local token when unset.
 */
export const DEMO_CATALOG_SECRET_REF = 'DF_SECRET_DEMO_CATALOG';

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
