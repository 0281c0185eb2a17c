/** `durable-fetch sources try`: a source's first pages, fetched for real, stored nowhere. */
import type { Command } from 'commander';
import { UserFacingError } from '../../../runtime/errors.ts';
import type { CliContext } from '../../context.ts';
import type { TryReport } from '../../../client/sources/try.ts';
import { printJson } from '../output.ts';
import { windowText } from '../../../client/format.ts';
import { integerArg } from './args.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = async () => {
  const [m0, m1, m2] = await Promise.all([
    import('../../../activities/http.ts'),
    import('../../../activities/create-deps.ts'),
    import('../../../client/sources/try.ts'),
  ]);
  return { ...m0, ...m1, ...m2 };
};

const MAX_TRY_PAGES = 20;

function shownIds(ids: readonly string[]): string {
  if (ids.length <= 4) return ids.join(', ');
  return `${ids.slice(0, 2).join(', ')}, … ${ids.at(-1)}`;
}

/** A cursor as a line shows it: a long one (a parent → child source's, a long link) cut short. */
function shownCursor(cursor: string | null): string {
  if (cursor === null) return 'none (last page)';
  if (cursor.length <= 160) return cursor;
  return `${cursor.slice(0, 120)}… (${cursor.length} characters; --json shows it whole)`;
}

function printReport(r: TryReport): void {
  process.stdout.write(`source ${r.sourceId} (job ${r.jobType}), business date ${r.businessDate}\n`);
  if (r.window) process.stdout.write(`window: ${windowText(r.window)}\n`);
  for (const p of r.pages) {
    process.stdout.write(
      `page ${p.page}: ${p.records} record(s)${p.ids.length > 0 ? ` [${shownIds(p.ids)}]` : ''}; next cursor ${shownCursor(p.nextCursor)}\n`,
    );
  }
  for (const w of r.warnings) {
    process.stdout.write(`warning: ${w.warning}, on every page tried (${w.pages})\n`);
  }
  const tail = r.failure
    ? `a run would fail here: ${r.failure.type} ${r.failure.code}: ${r.failure.message}`
    : r.complete
      ? `the partner has no more (${r.end ?? 'no next cursor'}): a run would end here`
      : 'the partner has more: a run would go on from the last next cursor';
  process.stdout.write(
    `${r.records} record(s) on ${r.pages.length} page(s); ${tail}. Nothing was written.\n`,
  );
}

/** Registers `sources try` under `sources`. */
export function registerSourcesTry(sources: Command, ctx: () => CliContext): void {
  sources
    .command('try')
    .description(
      "fetch a source's first pages with its real config and print what a run would store (writes nothing but a refreshed OAuth2 token)",
    )
    .argument('<id>', 'source id')
    .requiredOption('--date <YYYY-MM-DD>', 'business date to fetch')
    .option('--pages <n>', `partner pages to fetch, 1..${MAX_TRY_PAGES}`, integerArg, 2)
    .option('--json', 'print JSON (every id)')
    .action(async (id: string, opts: { date: string; pages: number; json?: boolean }) => {
      const m = await impl();
      if (!/^\d{4}-\d{2}-\d{2}$/.test(opts.date) || Number.isNaN(Date.parse(`${opts.date}T00:00:00Z`))) {
        throw new UserFacingError(
          `sources try: --date must be YYYY-MM-DD, got '${opts.date}'`,
          'INVALID_INPUT',
        );
      }
      if (opts.pages < 1 || opts.pages > MAX_TRY_PAGES) {
        throw new UserFacingError(`sources try: --pages must be 1..${MAX_TRY_PAGES}`, 'INVALID_INPUT');
      }
      const { defaultJobs } = await import('../../../jobs/registry.ts');
      const c = ctx();
      const prisma = await c.prisma();
      const http = m.createHttpClient(c.config.http);
      const secret = (ref: string) => (m.isSecretRef(ref) ? process.env[ref] : undefined);
      // An OAuth2 source's token, as a worker gets it: refreshed and saved for every worker.
      const keyText = process.env.DF_SECRET_CREDENTIALS_KEY;
      const { createTokenProvider } = await import('../../../activities/credentials/token-provider.ts');
      const { parseMasterKey } = await import('../../../runtime/credential-cipher.ts');
      const tokens = keyText
        ? createTokenProvider({ prisma, key: parseMasterKey(keyText), secret })
        : undefined;
      let report: TryReport;
      try {
        report = await m.trySource(
          {
            prisma,
            http,
            secret,
            ...(tokens ? { tokens } : {}),
            jobs: defaultJobs(),
            pageLimit: c.config.partner.pageLimit,
            requestTimeoutMs: c.config.http.responseTimeoutMs + c.config.http.connectTimeoutMs,
          },
          { sourceId: id, businessDate: opts.date, pages: opts.pages },
        );
      } finally {
        await http.close();
      }
      if (opts.json) printJson(report);
      else printReport(report);
      // Printed in full first; the one-line error then makes the exit code 1.
      if (report.failure) {
        throw new UserFacingError(`sources try: a run would fail with ${report.failure.code}`, 'TRY_FAILED');
      }
    });
}
