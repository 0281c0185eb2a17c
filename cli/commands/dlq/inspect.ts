/**
 * `durable-fetch dlq list` and `dlq show`: the read-only dead letter commands, and the table rows
 * and field lists they print.
 */
import type { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { UserFacingError } from '../../../runtime/errors.ts';
import type { CliContext } from '../../context.ts';
import type { DeadLetterDetail } from '../../../client/dead-letters/show.ts';
import { listDeadLetters } from '../../../client/dead-letters/list.ts';
import { parseSince } from '../../../client/dead-letters/since.ts';
import type { TimelineEntry } from '../../../client/dead-letters/timeline.ts';
import type { DeadLetterView } from '../../../client/dead-letters/view.ts';
import { table, workflowUrl } from '../../../client/format.ts';
import { deadLetterId, parseLimit, parseStatus, STATUSES } from './args.ts';
import { parseJobType, printAuditTrail, printJson } from '../output.ts';

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

/** Adds `list` and `show` to the `dlq` command; neither writes anything. */
export function registerDlqInspect(dlq: Command, ctx: () => CliContext): void {
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
        const sql = await ctx().sql();
        const list = await listDeadLetters(
          { sql },
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
      // Imported by this command alone: it loads Temporal's client, which help and `list` need not.
      const { getDeadLetter } = await import('../../../client/dead-letters/show.ts');
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
}
