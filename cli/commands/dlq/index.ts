/**
 * `durable-fetch dlq`: the dead letter command group and its help text. The subcommands live in
 * dlq-inspect.ts (list, show), dlq-resolve.ts (retry, discard) and dlq-replay.ts (replay and its
 * controls), registered in that order so `dlq --help` lists them as before.
 */
import type { Command } from 'commander';
import type { CliContext } from '../../context.ts';
import { registerDlqInspect } from './inspect.ts';
import { registerDlqReplay } from './replay.ts';
import { registerDlqResolve } from './resolve.ts';

const DLQ_HELP = `
A run that fails for good (a non-retryable error, or its attempts or deadline exhausted) writes one
dead letter: its business key, workflow and run ids, error type, safe code, redacted message,
attempts and failure times. It stays open until an operator retries it (after fixing the cause: the
run resumes from its stored pages, which are not fetched or written again) or discards it with a
reason, or until the run of its business key succeeds another way (a Web UI Reset, a new execution
of its workflow), which closes it as superseded. All are audited (who, when, why). Statuses: open,
retried, discarded, superseded.`;

/** `durable-fetch dlq list|show|retry|discard` and the replay commands. */
export function registerDlq(program: Command, ctx: () => CliContext): void {
  const dlq = program
    .command('dlq')
    .description('dead letters: runs that failed for good and need a human')
    .addHelpText('after', DLQ_HELP);

  registerDlqInspect(dlq, ctx);
  registerDlqResolve(dlq, ctx);
  registerDlqReplay(dlq, ctx);
}
