import type { Command } from 'commander';
import { UserFacingError } from '../../runtime/errors.ts';
import { sinkFor } from '../../contract/outbox-routes.ts';
import { type DeadEvent, listDead, requeueDead, topicStatus } from '../../db/outbox/admin.ts';
import type { CliContext } from '../context.ts';
import { duration, table } from '../../client/format.ts';
import { parseLimit, printJson } from './output.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An event id argument, or a one-line user error. */
function eventId(value: string): string {
  if (!UUID.test(value)) throw new UserFacingError(`'${value}' is not an event id (a UUID)`, 'INVALID_INPUT');
  return value.toLowerCase();
}

const age = (ms: number | null) => (ms === null ? '-' : duration(ms));

function deadRow(e: DeadEvent): Record<string, string> {
  return {
    id: e.id,
    topic: e.topic,
    aggregate: `${e.aggregateType}/${e.aggregateId}`,
    attempts: String(e.attempts),
    error: `${e.lastErrorType ?? ''}: ${e.lastError ?? ''}`.slice(0, 80),
    'failed at': e.failedAt.toISOString(),
  };
}

/** `durable-fetch outbox status|dead list|dead show|dead requeue` */
export function registerOutbox(program: Command, ctx: () => CliContext): void {
  const outbox = program
    .command('outbox')
    .description('inspect the transactional outbox and its dead events');

  outbox
    .command('status')
    .description('pending events, oldest pending age, claims in flight, retries and dead events, per sink')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const c = ctx();
      const topics = (await topicStatus(await c.prisma())).map((t) => ({
        ...t,
        sink: sinkFor(c.config.outbox.routes, t.topic) ?? 'none (no route)',
      }));
      const sinks = new Map<
        string,
        {
          sink: string;
          pending: number;
          inFlight: number;
          retrying: number;
          dead: number;
          oldestPendingMs: number | null;
        }
      >();
      for (const t of topics) {
        const s = sinks.get(t.sink) ?? {
          sink: t.sink,
          pending: 0,
          inFlight: 0,
          retrying: 0,
          dead: 0,
          oldestPendingMs: null,
        };
        s.pending += t.pending;
        s.inFlight += t.inFlight;
        s.retrying += t.retrying;
        s.dead += t.dead;
        if (t.oldestPendingMs !== null)
          s.oldestPendingMs = Math.max(s.oldestPendingMs ?? 0, t.oldestPendingMs);
        sinks.set(t.sink, s);
      }
      const total = {
        pending: topics.reduce((n, t) => n + t.pending, 0),
        inFlight: topics.reduce((n, t) => n + t.inFlight, 0),
        retrying: topics.reduce((n, t) => n + t.retrying, 0),
        dead: topics.reduce((n, t) => n + t.dead, 0),
        oldestPendingMs: topics.reduce<number | null>(
          (m, t) => (t.oldestPendingMs === null ? m : Math.max(m ?? 0, t.oldestPendingMs)),
          null,
        ),
      };
      if (opts.json) return printJson({ ...total, sinks: [...sinks.values()], topics });
      console.log(
        `pending ${total.pending} (oldest ${age(total.oldestPendingMs)}), in flight ${total.inFlight}, ` +
          `retrying ${total.retrying}, dead ${total.dead}`,
      );
      if (topics.length === 0) return;
      const rows = topics.map((t) => ({
        sink: t.sink,
        topic: t.topic,
        pending: String(t.pending),
        'oldest pending': age(t.oldestPendingMs),
        'in flight': String(t.inFlight),
        retrying: String(t.retrying),
        dead: String(t.dead),
      }));
      console.log(
        table(rows, ['sink', 'topic', 'pending', 'oldest pending', 'in flight', 'retrying', 'dead']),
      );
      if (total.dead > 0)
        console.log('dead events hold back later events of their aggregate: see `outbox dead list`');
    });

  const dead = outbox
    .command('dead')
    .description('dead events: failed permanently or ran out of attempts; they hold back their aggregate');
  dead
    .command('list')
    .description('list dead events, oldest first')
    .option('--topic <topic>', 'only this topic')
    .option('--limit <n>', 'at most n events (default 100)', parseLimit)
    .option('--json', 'print JSON')
    .action(async (opts: { topic?: string; limit?: number; json?: boolean }) => {
      const list = await listDead(await ctx().prisma(), opts);
      if (opts.json) return printJson(list.map(({ payload: _payload, ...e }) => e));
      if (list.length === 0) return console.log('no dead events');
      console.log(table(list.map(deadRow), ['id', 'topic', 'aggregate', 'attempts', 'error', 'failed at']));
    });
  dead
    .command('show')
    .description('show one dead event: its error (redacted), attempts and payload (ids only)')
    .argument('<id>', 'event id')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const [event] = await listDead(await ctx().prisma(), { id: eventId(id) });
      if (!event) throw new UserFacingError(`no dead event '${id}'`, 'NOT_FOUND');
      if (opts.json) return printJson(event);
      const fields: [string, string][] = [
        ...Object.entries(deadRow(event)),
        ['error', `${event.lastErrorType ?? ''}: ${event.lastError ?? ''}`],
        ['seq', event.seq],
        ['created', event.createdAt.toISOString()],
        ['payload', JSON.stringify(event.payload)],
      ];
      const width = Math.max(...fields.map(([k]) => k.length));
      for (const [k, v] of fields) console.log(`${k.padEnd(width)}  ${v}`);
    });
  dead
    .command('requeue')
    .description('put dead events back to pending with a fresh attempt budget (after fixing the cause)')
    .argument('[ids...]', 'event ids (or use --all / --topic)')
    .option('--topic <topic>', 'every dead event of this topic')
    .option('--all', 'every dead event')
    .option('--json', 'print JSON')
    .action(async (ids: string[], opts: { topic?: string; all?: boolean; json?: boolean }) => {
      const parsed = ids.map(eventId);
      if (parsed.length === 0 && !opts.topic && !opts.all) {
        throw new UserFacingError('name event ids, or pass --topic <topic> or --all', 'INVALID_INPUT');
      }
      const requeued = await requeueDead(await ctx().prisma(), {
        ...(parsed.length > 0 ? { ids: parsed } : {}),
        ...(opts.topic ? { topic: opts.topic } : {}),
      });
      if (opts.json) return printJson({ requeued });
      console.log(`requeued ${requeued.length} dead event${requeued.length === 1 ? '' : 's'}`);
      const missing = parsed.filter((id) => !requeued.includes(id));
      if (missing.length > 0) console.log(`not dead (or unknown), left alone: ${missing.join(', ')}`);
    });
}
