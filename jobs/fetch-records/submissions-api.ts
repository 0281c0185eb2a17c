/**
 * The demo partner's submissions API, the fetch-records job's non-idempotent downstream action:
 * `POST /submissions` creates a new submission on every call (no idempotency key), `POST
 * /submissions/:id/confirm` and `/void` act on one by the partner's id (repeat-safe), and `GET
 * /submissions?reference=` lists what exists for a reference. Responses are validated (zod).
 */
import { z } from 'zod';
import {
  type DownstreamAction,
  type DownstreamContext,
  type DownstreamEffect,
  failure,
} from '../../activities/job-api/index.ts';
import { withSlash } from './records-api.ts';

const submissionSchema = z.looseObject({
  id: z.string().min(1).max(200),
  reference: z.string(),
  status: z.enum(['submitted', 'confirmed', 'voided']),
});
type Submission = z.infer<typeof submissionSchema>;

const listSchema = z.object({ submissions: z.array(submissionSchema) });

function url(ctx: DownstreamContext<unknown>, path: string): URL {
  return new URL(path, withSlash(ctx.source.baseUrl));
}

function headers(ctx: DownstreamContext<unknown>): Record<string, string> {
  const h: Record<string, string> = { accept: 'application/json' };
  if (ctx.token !== undefined) h.authorization = `Bearer ${ctx.token}`;
  return h;
}

function effectOf(s: Submission): DownstreamEffect {
  return { id: s.id, status: s.status, voided: s.status === 'voided' };
}

function parsed(body: unknown, what: string): DownstreamEffect {
  const result = submissionSchema.safeParse(body);
  if (!result.success)
    throw failure('InvalidResponse', 'SUBMISSION_SHAPE', `${what}: unexpected response shape`);
  return effectOf(result.data);
}

async function act(ctx: DownstreamContext<unknown>, id: string, verb: 'confirm' | 'void') {
  const what = `partner ${ctx.source.id} ${verb}`;
  const res = await ctx.http.postJson(
    url(ctx, `submissions/${encodeURIComponent(id)}/${verb}`),
    {},
    { signal: ctx.signal, headers: headers(ctx), what },
  );
  return parsed(res, what);
}

/** Submits the run's summary (page and record counts, nothing else), then confirms it. */
export const submitSummary: DownstreamAction<unknown> = {
  name: 'submit-summary',
  async submit(ctx) {
    const what = `partner ${ctx.source.id} submit`;
    const body = { reference: ctx.reference, summary: { pages: ctx.run.pages, records: ctx.run.records } };
    const res = await ctx.http.postJson(url(ctx, 'submissions'), body, {
      signal: ctx.signal,
      headers: headers(ctx),
      what,
      sendBy: ctx.sendBy,
    });
    return parsed(res, what);
  },
  async lookup(ctx, reference) {
    const what = `partner ${ctx.source.id} lookup`;
    const u = url(ctx, 'submissions');
    u.searchParams.set('reference', reference);
    const res = await ctx.http.getJson(u, { signal: ctx.signal, headers: headers(ctx), what });
    const result = listSchema.safeParse(res);
    if (!result.success)
      throw failure('InvalidResponse', 'LOOKUP_SHAPE', `${what}: unexpected response shape`);
    return result.data.submissions.map(effectOf);
  },
  confirm: (ctx, id) => act(ctx, id, 'confirm'),
  void: (ctx, id) => act(ctx, id, 'void'),
};
