import type { Command } from 'commander';
import { defaultActor } from '../../../client/audit.ts';
import { UserFacingError } from '../../../runtime/errors.ts';
import type { CliContext } from '../../context.ts';
import { printJson } from '../output.ts';

const WATERMARK_HELP = `
An incremental source (its config has an "incremental" part) reads, each run, what changed since
its watermark: the highest cursor value its runs stored, less the source's lookback. Without
options this shows it. --set moves it (back: the next run reads again what changed since, as
upserts; forward: changes before it are skipped); --reset removes it (the next run starts from the
config's start). Both need --reason and are audited. A run whose window was fixed before (a running
one, a failed one retried later) keeps it, but no longer moves the watermark.`;

/** The watermark in words. */
export function watermarkLine(w: { kind: string; value: string; businessDate: string } | undefined): string {
  return w === undefined
    ? 'none (the next run starts from the start)'
    : `${w.value} (${w.kind}, by the run of ${w.businessDate})`;
}

/** Registers `sources watermark` under `sources`. */
export function registerSourcesWatermark(sources: Command, ctx: () => CliContext): void {
  sources
    .command('watermark')
    .description("show an incremental source's watermark, or set it back or forward, or reset it (audited)")
    .argument('<id>', 'source id')
    .option('--set <value>', 'the new watermark: an ISO-8601 instant with its offset, or an integer')
    .option('--reset', "remove the watermark: the next run starts from the config's start")
    .option('--reason <text>', 'why (with --set or --reset; audited)')
    .option('--by <who>', 'who (default: the OS user)')
    .option('--json', 'print JSON')
    .addHelpText('after', WATERMARK_HELP)
    .action(
      async (
        id: string,
        opts: { set?: string; reset?: boolean; reason?: string; by?: string; json?: boolean },
      ) => {
        const m = await import('../../../client/sources/watermark.ts');
        const prisma = await ctx().prisma();
        if (opts.set === undefined && !opts.reset) {
          const shown = await m.getWatermark({ prisma }, id);
          if (opts.json) return printJson(shown);
          if (shown.kind === undefined) return console.log(`${id}: not incremental`);
          return console.log(
            `${id}: watermark ${watermarkLine(shown.watermark)}; start ${shown.start ?? ''}`,
          );
        }
        if (opts.set !== undefined && opts.reset) {
          throw new UserFacingError('sources watermark: --set or --reset, not both', 'INVALID_INPUT');
        }
        if (opts.reason === undefined) {
          throw new UserFacingError('sources watermark: --set and --reset need --reason', 'INVALID_INPUT');
        }
        const changed = await m.setSourceWatermark({ prisma }, id, {
          to: opts.set,
          reason: opts.reason,
          actor: opts.by ?? defaultActor(),
        });
        if (opts.json) return printJson(changed);
        console.log(`${id}: watermark ${watermarkLine(changed.now)} (was ${watermarkLine(changed.was)})`);
      },
    );
}
