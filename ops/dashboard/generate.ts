/**
 * Writes the dashboard of ops/dashboard/dashboard.ts to ops/grafana/durable-fetch.json, formatted
 * by the project's Prettier settings so that `npm run lint` accepts the committed file as written.
 * Grafana provisions it from there (docs/dashboard.md).
 *
 * Usage: `npm run dashboard`. Overwrites the file; idempotent.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import prettier from 'prettier';
import { buildDashboard } from './dashboard.ts';

/** The committed dashboard (a deploy provisions Grafana from this exact path). */
export const DASHBOARD_FILE = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  'grafana',
  'durable-fetch.json',
);

/** The file's text: the dashboard's JSON as Prettier formats it with the project's config. */
export async function dashboardText(): Promise<string> {
  const options = (await prettier.resolveConfig(DASHBOARD_FILE)) ?? {};
  return prettier.format(JSON.stringify(buildDashboard()), { ...options, filepath: DASHBOARD_FILE });
}

async function main(): Promise<void> {
  await mkdir(path.dirname(DASHBOARD_FILE), { recursive: true });
  await writeFile(DASHBOARD_FILE, await dashboardText());
  console.log(`wrote ${path.relative(process.cwd(), DASHBOARD_FILE)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
