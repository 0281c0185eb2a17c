import { type Command, InvalidArgumentError } from 'commander';
import { DownstreamState } from '../../prisma/generated/enums.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { defaultActor } from '../../client/audit.ts';
import type { CliContext } from '../context.ts';
import type { Compensation } from '../../client/compensations/index.ts';
import { isCompensationId } from '../../client/compensations/common.ts';
import { table, workflowUrl } from '../../client/format.ts';
import { parseLimit, printAuditTrail, printJson } from './output.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = () => import('../../client/compensations/index.ts');

const STATES: string[] = Object.values(DownstreamState);

const LEDGER_HELP = `
The compensation ledger holds one row per non-idempotent downstream call of a run (the demo job's
summary submission). A run that fails for good or is cancelled undoes its calls (compensation);
a row whose compensation exhausted its budget is needs_manual and waits for an operator, who either
fixes the cause and retries it, or settles it by hand and resolves it. Both are audited.
A stray is a row of its own for an effect the partner holds under an action's reference that the
ledger did not expect (a superseded attempt's late call, a second live submission a lookup or
\`reconcile\` found): it is voided whatever its run's outcome (\`stray of\` names the action).
States: ${STATES.join(', ')}.`;

function parseState(value: string): DownstreamState {
  if (!STATES.includes(value)) throw new InvalidArgumentError(`expected one of ${STATES.join(', ')}`);
  return value as DownstreamState;
}

/** A compensation id argument, or a one-line user error. */
function compensationId(value: string): string {
  if (!isCompensationId(value)) {
    throw new UserFacingError(`'${value}' is not a compensation id (a UUID)`, 'INVALID_INPUT');
  }
  return value.toLowerCase();
}

function row(c: Compensation): Record<string, string> {
  return {
    id: c.id,
    source: c.sourceId,
    date: c.businessDate,
    action: c.strayOf ? `${c.action} (stray)` : c.action,
    state: c.state,
    'partner id': c.partnerId ?? '',
    calls: String(c.attempts),
    'undo attempts': String(c.compensationAttempts),
    updated: c.updatedAt.toISOString(),
  };
}

const COLUMNS = [
  'id',
  'source',
  'date',
  'action',
  'state',
  'partner id',
  'calls',
  'undo attempts',
  'updated',
];

const iso = (d: Date | null) => d?.toISOString() ?? '';

/** `durable-fetch compensations list|show|resolve|retry` */
export function registerCompensations(program: Command, ctx: () => CliContext): void {
  const compensations = program
    .command('compensations')
    .description('the compensation ledger: downstream actions of runs, and those needing an operator')
    .addHelpText('after', LEDGER_HELP);

  compensations
    .command('list')
    .description('list ledger rows, most recently changed first, then how many are needs_manual')
    .option('--state <state>', `only this state (${STATES.join('|')})`, parseState)
    .option('--source <id>', 'only this source (also for the needs_manual count)')
    .option('--stray', 'only strays (effects the ledger did not expect, voided whatever the run)')
    .option('--limit <n>', 'at most n rows (default 50)', parseLimit)
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        state?: DownstreamState;
        source?: string;
        stray?: boolean;
        limit?: number;
        json?: boolean;
      }) => {
        const prisma = await ctx().prisma();
        const m = await impl();
        const list = await m.listCompensations(
          { prisma },
          { state: opts.state, sourceId: opts.source, strays: opts.stray === true, limit: opts.limit },
        );
        if (opts.json) return printJson(list);
        if (list.length === 0) return console.log('no compensations');
        console.log(table(list.map(row), COLUMNS));
        console.log(`needs_manual: ${await m.countNeedsManual({ prisma }, { sourceId: opts.source })}`);
      },
    );

  compensations
    .command('show')
    .description('show one ledger row: every field, its last error, its audit trail and its workflow')
    .argument('<id>', 'compensation id (a UUID, from `compensations list`)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const m = await impl();
      const c = ctx();
      const found = await m.getCompensation({ prisma: await c.prisma() }, compensationId(id));
      if (!found) throw new UserFacingError(`no compensation '${id}'`, 'NOT_FOUND');
      if (opts.json) return printJson(found);
      const ui = c.config.temporal.uiUrl;
      const fields: [string, string][] = [
        ...Object.entries(row(found)),
        ['run', found.run.id],
        ['run status', found.run.status],
        ['run workflow', found.run.workflowId],
        ['business key', found.businessKey],
        ['key', found.key],
        ['reference', found.reference],
        ['round', String(found.round)],
        ['stray of', found.strayOf ?? ''],
        ['last call', iso(found.lastCallAt)],
        ['settles at', iso(found.settlesAt)],
        ['step', String(found.step)],
        ['partner state', found.partnerState ?? ''],
        ['lookups', String(found.lookups)],
        ['created', found.createdAt.toISOString()],
        ['confirmed', iso(found.confirmedAt)],
        ['compensated', iso(found.compensatedAt)],
        ['resolved', iso(found.resolvedAt)],
        ['resolved by', found.resolvedBy ?? ''],
        ['resolution note', found.resolutionNote ?? ''],
        ['last error', found.lastErrorType ? `${found.lastErrorType}: ${found.lastError ?? ''}` : ''],
        ['compensation', found.compensationWorkflowId],
        ['web ui', ui ? workflowUrl(ui, c.config.temporal.namespace, found.compensationWorkflowId) : ''],
      ];
      const width = Math.max(...fields.map(([k]) => k.length));
      for (const [k, v] of fields) console.log(`${k.padEnd(width)}  ${v}`);
      console.log('');
      printAuditTrail(found.audit);
    });

  compensations
    .command('resolve')
    .description(
      'record that a needs_manual row was settled by hand (calls no partner); the run ends compensated once nothing else is unsettled',
    )
    .argument('<id>', 'compensation id (a UUID)')
    .requiredOption('--note <text>', 'what was done and why (1..1000 characters; kept and audited)')
    .option('--by <who>', 'who did it (default: the OS user)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { note: string; by?: string; json?: boolean }) => {
      const m = await impl();
      const prisma = await ctx().prisma();
      const resolved = await m.resolveCompensation({ prisma }, compensationId(id), {
        note: opts.note,
        actor: opts.by ?? defaultActor(),
      });
      if (opts.json) return printJson(resolved);
      const { compensation: c, runStatus } = resolved;
      console.log(
        `resolved ${c.id} (was ${resolved.previousState}); run ${c.fetchRunId} is ` +
          (runStatus === 'compensated'
            ? 'now compensated'
            : `${runStatus} (other actions of it are not settled yet)`),
      );
    });

  compensations
    .command('retry')
    .description(
      "run a needs_manual row's compensation again (after fixing its cause): it is voided, or looked up first when its partner id is unknown",
    )
    .argument('<id>', 'compensation id (a UUID)')
    .option('--reason <text>', 'why (kept in the audit trail)')
    .option('--by <who>', 'who asked (default: the OS user)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { reason?: string; by?: string; json?: boolean }) => {
      const m = await impl();
      const c = ctx();
      const started = await m.retryCompensation(
        { prisma: await c.prisma(), temporal: await c.temporal(), taskQueue: c.config.temporal.taskQueue },
        compensationId(id),
        { actor: opts.by ?? defaultActor(), ...(opts.reason === undefined ? {} : { reason: opts.reason }) },
      );
      if (opts.json) return printJson(started);
      console.log(
        `started ${started.workflowId} (run ${started.runId}) on task queue ${started.taskQueue}; ` +
          `compensation ${id.toLowerCase()} is ${started.state} until it settles`,
      );
      const ui = c.config.temporal.uiUrl;
      if (ui) console.log(workflowUrl(ui, c.config.temporal.namespace, started.workflowId, started.runId));
    });
}
