import type { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { DeadLetterStatus } from '../../prisma/generated/enums.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import type { CliContext } from '../cli-context.ts';
import { defaultActor } from '../audit.ts';
import { discardDeadLetter } from '../dead-letters/discard.ts';
import { listDeadLetters } from '../dead-letters/list.ts';
import { OVERRIDE_KEYS, parseOverrides } from '../dead-letters/overrides.ts';
import { retryDeadLetter } from '../dead-letters/retry.ts';
import { type DeadLetterDetail, getDeadLetter } from '../dead-letters/show.ts';
import { parseSince } from '../dead-letters/since.ts';
import type { TimelineEntry } from '../dead-letters/timeline.ts';
import { type DeadLetterView, isDeadLetterId } from '../dead-letters/view.ts';
import { table, workflowUrl } from '../format.ts';
import { registerDlqReplay } from './dlq-replay.ts';
import { parseJobType, printAuditTrail, printJson } from './output.ts';

const STATUSES: string[] = [...Object.values(DeadLetterStatus), 'all'];

const DLQ_HELP = `
A run that fails for good (a non-retryable error, or its attempts or deadline exhausted) writes one
dead letter: its business key, workflow and run ids, error type, safe code, redacted message,
attempts and failure times. It stays open until an operator retries it (after fixing the cause: the
run resumes from its stored pages, which are not fetched or written again) or discards it with a
reason. Both are audited (who, when, why). Statuses: open, retried, discarded.`;

/** `--status`: one line on bad input. */
function parseStatus(value: string | undefined): DeadLetterStatus | 'all' | undefined {
  if (value === undefined) return undefined;
  if (!STATUSES.includes(value)) {
    throw new UserFacingError(
      `invalid --status '${value}': expected one of ${STATUSES.join(', ')}`,
      'INVALID_INPUT',
    );
  }
  return value as DeadLetterStatus | 'all';
}

/** `--limit`: an integer 1..1000, one line on bad input. */
function parseLimit(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d{1,4}$/.test(value) ? Number(value) : NaN;
  if (!(n >= 1 && n <= 1000)) {
    throw new UserFacingError(`invalid --limit '${value}': expected an integer 1..1000`, 'INVALID_INPUT');
  }
  return n;
}

/** A dead letter id argument, or a one-line user error. */
function deadLetterId(value: string): string {
  if (!isDeadLetterId(value)) {
    throw new UserFacingError(`'${value}' is not a dead letter id (a UUID)`, 'INVALID_INPUT');
  }
  return value.toLowerCase();
}

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];
const iso = (d: Date | null | undefined) => d?.toISOString() ?? '';

function row(d: DeadLetterView): Record<string, string> {
  return {
    id: d.id,
    job: d.jobType,
    source: d.sourceId,
    date: d.businessDate,
    'error type': d.errorType,
    code: d.errorCode ?? '',
    attempts: String(d.attempts),
    status: d.status,
    'last failed': d.lastFailedAt.toISOString(),
  };
}

const COLUMNS = ['id', 'job', 'source', 'date', 'error type', 'code', 'attempts', 'status', 'last failed'];

function failureText(f: { type: string; message: string } | undefined): string {
  return f ? `${f.type}: ${f.message}` : '';
}

function timelineRow(t: TimelineEntry): Record<string, string> {
  return {
    activity: t.activity,
    attempt: String(t.attempt),
    scheduled: t.scheduledAt.toISOString(),
    started: iso(t.startedAt),
    ended: iso(t.endedAt),
    outcome: t.outcome,
    failure: t.failure
      ? failureText(t.failure)
      : t.previousFailure
        ? `(attempt ${t.attempt - 1}: ${failureText(t.previousFailure)})`
        : '',
  };
}

/** The Web UI link of the failed execution (or of the workflow when its run id is unknown). */
function webUiOf(c: CliContext, d: DeadLetterDetail | DeadLetterView): string | undefined {
  const ui = c.config.temporal.uiUrl;
  if (!ui) return undefined;
  const runId = ('timelineRunId' in d ? d.timelineRunId : undefined) ?? d.workflowRunId ?? undefined;
  return workflowUrl(ui, c.config.temporal.namespace, d.workflowId, runId);
}

function printFields(fields: [string, string][]): void {
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [k, v] of fields) console.log(`${k.padEnd(width)}  ${v}`.trimEnd());
}

/** `durable-fetch dlq list|show|retry|discard` and the replay commands (issue #7). */
export function registerDlq(program: Command, ctx: () => CliContext): void {
  const dlq = program
    .command('dlq')
    .description('dead letters: runs that failed for good and need a human')
    .addHelpText('after', DLQ_HELP);

  dlq
    .command('list')
    .description('list dead letters, newest first (default: the open ones)')
    .option('--job <type>', 'only this job type, e.g. fetch-records or exchange-rates', parseJobType)
    .option('--source <id>', 'only this source')
    .option('--error-type <type>', 'only this error type, e.g. InvalidInput or UpstreamUnavailable')
    .option(
      '--since <when>',
      'only letters written since YYYY-MM-DD, an ISO time, or a duration ago (2h, 3d)',
    )
    .option('--status <status>', `only this status (${STATUSES.join('|')}; default open)`)
    .option('--limit <n>', 'at most n letters (default 50)')
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        job?: string;
        source?: string;
        errorType?: string;
        since?: string;
        status?: string;
        limit?: string;
        json?: boolean;
      }) => {
        // Input first: a bad option is reported as such even when the database is down.
        const status = parseStatus(opts.status);
        const limit = parseLimit(opts.limit);
        const since = opts.since === undefined ? undefined : parseSince(opts.since);
        const prisma = await ctx().prisma();
        const list = await listDeadLetters(
          { prisma },
          { jobType: opts.job, sourceId: opts.source, errorType: opts.errorType, since, status, limit },
        );
        if (opts.json) return printJson(list);
        if (list.length === 0) return console.log('no dead letters');
        console.log(table(list.map(row), COLUMNS));
      },
    );

  dlq
    .command('show')
    .description(
      'show one dead letter: every field, the redacted failure, the attempts of the failed run (from Temporal), the audit trail and the Web UI link',
    )
    .argument('<id>', 'dead letter id (a UUID, from `dlq list`)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const c = ctx();
      const letterId = deadLetterId(id);
      const temporal = (): Promise<Client> => c.temporal();
      const found = await getDeadLetter({ prisma: await c.prisma(), temporal }, letterId);
      if (!found) throw new UserFacingError(`no dead letter '${id}'`, 'NOT_FOUND');
      const webUi = webUiOf(c, found);
      if (opts.json) return printJson({ ...found, webUi: webUi ?? null });
      printFields([
        ['id', found.id],
        ['status', found.status],
        ['source', found.sourceId],
        ['date', found.businessDate],
        ['business key', found.businessKey],
        ['job type', found.jobType],
        ['error type', found.errorType],
        ['error code', found.errorCode ?? ''],
        ['error', found.errorMessage],
        ['attempts', String(found.attempts)],
        ['first failed', iso(found.firstFailedAt)],
        ['last failed', iso(found.lastFailedAt)],
        ['run', found.run.id],
        ['run status', found.run.status],
        ['pages stored', String(found.run.pagesStored)],
        ['records stored', String(found.run.recordsStored)],
        ['workflow', found.workflowId],
        ['workflow run', found.workflowRunId ?? ''],
        ['created', iso(found.createdAt)],
        ['closed', iso(found.closedAt)],
        ['closed by', found.closedBy ?? ''],
        ['close reason', found.closeReason ?? ''],
        ['replay', found.replayId ?? ''],
        ['web ui', webUi ?? ''],
      ]);
      console.log('');
      if (found.timeline === undefined) {
        console.log(`timeline: unavailable (${found.timelineNote ?? 'unknown'})`);
      } else {
        const of =
          found.timelineRunId && found.timelineRunId !== found.workflowRunId
            ? ` (execution ${found.timelineRunId})`
            : '';
        console.log(`timeline${of}:`);
        if (found.timelineNote) console.log(`note: ${found.timelineNote}`);
        console.log(
          found.timeline.length === 0
            ? 'no activities'
            : table(found.timeline.map(timelineRow), [
                'activity',
                'attempt',
                'scheduled',
                'started',
                'ended',
                'outcome',
                'failure',
              ]),
        );
      }
      console.log('');
      printAuditTrail(found.audit);
    });

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
        const retried = await retryDeadLetter(
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
      const letterId = deadLetterId(id);
      if (opts.reason === undefined) {
        throw new UserFacingError('a reason is required: --reason <text>', 'INVALID_INPUT');
      }
      const prisma = await ctx().prisma();
      const discarded = await discardDeadLetter({ prisma }, letterId, {
        reason: opts.reason,
        actor: opts.by ?? defaultActor(),
      });
      if (opts.json) return printJson(discarded);
      console.log(
        `discarded dead letter ${discarded.id} (${discarded.businessKey}) by ${discarded.closedBy ?? ''}: ` +
          `${discarded.closeReason ?? ''}`,
      );
    });

  registerDlqReplay(dlq, ctx);
}
