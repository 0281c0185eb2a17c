/**
 * Writes sources.schema.json, the JSON Schema of sources files (`durable-fetch sources apply -f`),
 * from the zod schemas of the settings and of every job this deployment registers:
 * `npm run schema:sources`. Run it again after adding a job or changing a job's config schema;
 * a test fails while the committed file differs from what this writes.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { sourcesJsonSchema } from '../client/sources/file-schema.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { defaultJobs } from '../jobs/registry.ts';

/** Where the schema is committed (the example's `$schema` comment points here). */
export const SOURCES_SCHEMA_FILE = path.join(PROJECT_ROOT, 'sources.schema.json');

/** The file's text: the schema for the jobs of jobs/registry.ts, as the script writes it. Pure. */
export function sourcesSchemaText(): string {
  return `${JSON.stringify(sourcesJsonSchema(defaultJobs()), null, 2)}\n`;
}

async function main(): Promise<void> {
  await writeFile(SOURCES_SCHEMA_FILE, sourcesSchemaText());
  console.log(`wrote ${path.relative(process.cwd(), SOURCES_SCHEMA_FILE) || SOURCES_SCHEMA_FILE}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
