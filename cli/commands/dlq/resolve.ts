/**
 * `durable-fetch dlq retry` and `dlq discard`: the two ways an operator closes one open dead
 * letter, both audited (who, when, why).
 */
import type { Command } from 'commander';
import { UserFacingError } from '../../../runtime/errors.ts';
import type { CliContext } from '../../context.ts';
import { defaultActor } from '../../../client/audit.ts';
import { OVERRIDE_KEYS, parseOverrides } from '../../../client/dead-letters/overrides.ts';
import { workflowUrl } from '../../../client/format.ts';
import { collect, deadLetterId } from './args.ts';
import { printJson } from '../output.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = async () => {
  const [m0, m1] = await Promise.all([
    import('../../../client/dead-letters/discard.ts'),
    import('../../../client/dead-letters/retry.ts'),
  ]);
  return { ...m0, ...m1 };
};

/** Adds `retry` and `discard` to the `dlq` command. */
export function registerDlqResolve(dlq: Command, ctx: () => CliContext): void {
  dlq
    .command('retry')
    .description(
      'start the run of an open dead letter again (after fixing its cause): it resumes from its stored pages, which are not fetched or written again',
    )
    .argument('<id>', 'dead letter id (a UUID)')
    .option(
      '--override <key=value>',
      `change the run's input (repeatable); keys: ${OVERRIDE_KEYS.join(', ')} (integers 1..1000)`,
      collect,
    )
    .option('--reason <text>', 'why (kept on the letter and in the audit trail)')
    .option('--by <who>', 'who asked (default: the OS user)')
    .option('--json', 'print JSON')
    .action(
      async (id: string, opts: { override?: string[]; reason?: string; by?: string; json?: boolean }) => {
        const letterId = deadLetterId(id);
        const overrides = parseOverrides(opts.override ?? []);
        const c = ctx();
        const m = await impl();
        const retried = await m.retryDeadLetter(
          {
            prisma: await c.prisma(),
            temporal: await c.temporal(),
            taskQueue: c.config.temporal.taskQueue,
            maxFutureDays: c.config.runs.maxFutureDays,
            maxInputBytes: c.config.runs.maxInputBytes,
          },
          letterId,
          {
            actor: opts.by ?? defaultActor(),
            overrides,
            ...(opts.reason === undefined ? {} : { reason: opts.reason }),
          },
        );
        const ui = c.config.temporal.uiUrl;
        const webUi = ui
          ? workflowUrl(ui, c.config.temporal.namespace, retried.workflowId, retried.runId)
          : undefined;
        if (opts.json) return printJson({ ...retried, webUi: webUi ?? null });
        const changed = Object.entries(retried.overrides)
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(', ');
        console.log(
          retried.joined
            ? `retried dead letter ${letterId}: ${retried.deadLetter.businessKey} was already ` +
                `${(retried.joinedStatus ?? 'started').toLowerCase()}, nothing new was started; ` +
                `joined ${retried.workflowId} (run ${retried.runId})`
            : `retried dead letter ${letterId}: started ${retried.workflowId} (run ${retried.runId}) ` +
                `on task queue ${retried.taskQueue}${changed ? ` with ${changed}` : ''}`,
        );
        if (webUi) console.log(webUi);
      },
    );

  dlq
    .command('discard')
    .description('give an open dead letter up, with a reason (starts nothing; audited)')
    .argument('<id>', 'dead letter id (a UUID)')
    .option('--reason <text>', 'why it is given up (required, 1..1000 characters; kept and audited)')
    .option('--by <who>', 'who decided (default: the OS user)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { reason?: string; by?: string; json?: boolean }) => {
      const m = await impl();
      const letterId = deadLetterId(id);
      if (opts.reason === undefined) {
        throw new UserFacingError('a reason is required: --reason <text>', 'INVALID_INPUT');
      }
      const prisma = await ctx().prisma();
      const discarded = await m.discardDeadLetter({ prisma }, letterId, {
        reason: opts.reason,
        actor: opts.by ?? defaultActor(),
      });
      if (opts.json) return printJson(discarded);
      console.log(
        `discarded dead letter ${discarded.id} (${discarded.businessKey}) by ${discarded.closedBy ?? ''}: ` +
          `${discarded.closeReason ?? ''}`,
      );
    });
}
