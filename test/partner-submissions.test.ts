import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import type { Submission } from '../partner/submissions.ts';
import { waitFor } from './helpers/outbox.ts';

interface Reply {
  status: number;
  body: {
    id?: string;
    reference?: string;
    status?: string;
    summary?: unknown;
    createdAt?: string;
    confirmedAt?: string;
    voidedAt?: string;
    submissions?: Submission[];
    error?: string;
    message?: string;
  };
  headers: Headers;
}

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<Reply> {
  const res = await fetch(`${base}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : {
          headers: { 'content-type': 'application/json' },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        }),
    ...(signal ? { signal } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Reply['body'], headers: res.headers };
}

const submit = (base: string, reference: string, summary?: unknown, signal?: AbortSignal) =>
  call(base, 'POST', '/submissions', summary === undefined ? { reference } : { reference, summary }, signal);
const confirm = (base: string, id: string, signal?: AbortSignal) =>
  call(base, 'POST', `/submissions/${id}/confirm`, undefined, signal);
const voidIt = (base: string, id: string, signal?: AbortSignal) =>
  call(base, 'POST', `/submissions/${id}/void`, undefined, signal);
const lookup = (base: string, reference: string) =>
  call(base, 'GET', `/submissions?reference=${encodeURIComponent(reference)}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const idNumber = (id: string | undefined) => Number(/^sub_(\d+)$/.exec(id ?? '')?.[1] ?? NaN);

void describe('partner: submissions', () => {
  let partner: PartnerServer;
  /** Ledger entries of the submissions routes as [action, status, effect, fault] tuples. */
  const trail = () =>
    partner.ledger
      .entries()
      .filter((e) => e.path.startsWith('/submissions'))
      .map((e) => [e.action, e.status, e.effect, e.fault]);
  before(async () => {
    partner = await startPartner({ port: 0 });
  });
  beforeEach(() => {
    partner.faults.clear();
    partner.ledger.clear();
    partner.submissions.clear();
  });
  after(() => partner.close());

  void it('submit is not idempotent: every POST creates a new submission with a new id', async () => {
    const first = await submit(partner.url, 'order-1', { amount: '12.50', lines: [1, 2] });
    assert.equal(first.status, 201);
    assert.deepEqual(Object.keys(first.body).sort(), ['createdAt', 'id', 'reference', 'status']);
    assert.equal(first.body.reference, 'order-1');
    assert.equal(first.body.status, 'submitted');
    assert.ok(!Number.isNaN(Date.parse(first.body.createdAt ?? '')));
    const second = await submit(partner.url, 'order-1', { amount: '12.50', lines: [1, 2] });
    assert.equal(second.status, 201);
    assert.notEqual(second.body.id, first.body.id);
    assert.ok(idNumber(second.body.id) > idNumber(first.body.id), `${second.body.id} after ${first.body.id}`);

    const stored = partner.submissions.byReference('order-1');
    assert.deepEqual(
      stored.map((s) => [s.id, s.status, s.summary]),
      [
        [first.body.id, 'submitted', { amount: '12.50', lines: [1, 2] }],
        [second.body.id, 'submitted', { amount: '12.50', lines: [1, 2] }],
      ],
    );
    const entries = partner.ledger.entries({ action: 'submit' });
    assert.deepEqual(
      entries.map((e) => [e.method, e.path, e.status, e.reference, e.submissionId, e.effect, e.fault]),
      [
        ['POST', '/submissions', 201, 'order-1', first.body.id, true, undefined],
        ['POST', '/submissions', 201, 'order-1', second.body.id, true, undefined],
      ],
    );
    assert.ok(!JSON.stringify(partner.ledger.entries()).includes('12.50'), 'the summary is never recorded');
  });

  void it('numbers ids sub_1, sub_2, … per server, also after clear()', async () => {
    const fresh = await startPartner({ port: 0 });
    try {
      assert.equal((await submit(fresh.url, 'a')).body.id, 'sub_1');
      assert.equal((await submit(fresh.url, 'a')).body.id, 'sub_2');
      assert.equal(fresh.submissions.clear(), 2);
      assert.equal((await submit(fresh.url, 'a')).body.id, 'sub_3');
    } finally {
      await fresh.close();
    }
  });

  void it('submit: 400 on a bad body (nothing created, recorded without effect), ignores extra fields, 405 otherwise', async () => {
    for (const body of [
      {},
      { reference: '' },
      { reference: 'x'.repeat(201) },
      { reference: 42 },
      [{ reference: 'order-1' }],
      'null',
    ]) {
      const res = await call(partner.url, 'POST', '/submissions', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error, 'invalid_submission', JSON.stringify(body));
      assert.ok((res.body.message ?? '').length > 0);
    }
    const badJson = await call(partner.url, 'POST', '/submissions', '{"reference":');
    assert.equal(badJson.status, 400);
    assert.equal(badJson.body.error, 'invalid_json');
    assert.equal(partner.submissions.list().length, 0);

    const extra = await call(partner.url, 'POST', '/submissions', { reference: 'r'.repeat(200), extra: 1 });
    assert.equal(extra.status, 201);
    assert.ok(!('extra' in (partner.submissions.get(extra.body.id ?? '') ?? {})));

    for (const method of ['PUT', 'DELETE', 'PATCH']) {
      const res = await call(partner.url, method, '/submissions');
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'GET, POST');
    }
    assert.equal((await call(partner.url, 'POST', '/submissions/sub_1')).status, 404);
    assert.equal(partner.submissions.list().length, 1);
    assert.equal(partner.ledger.count({ action: 'submit', status: 400 }), 7);
    assert.equal(partner.ledger.count({ path: '/submissions', status: 405 }), 3);
    assert.ok(
      partner.ledger
        .entries()
        .filter((e) => e.status >= 400)
        .every((e) => e.effect === false),
    );
  });

  void it('confirm: 200 with confirmedAt, idempotent by id; 404 unknown id; 405 other methods; ids are URL-decoded', async () => {
    const { body: created } = await submit(partner.url, 'order-2');
    const id = created.id ?? '';
    const first = await confirm(partner.url, id);
    assert.equal(first.status, 200);
    assert.equal(first.body.status, 'confirmed');
    assert.deepEqual(Object.keys(first.body).sort(), [
      'confirmedAt',
      'createdAt',
      'id',
      'reference',
      'status',
    ]);
    assert.equal(first.body.createdAt, created.createdAt);
    assert.ok(!Number.isNaN(Date.parse(first.body.confirmedAt ?? '')));
    const again = await confirm(partner.url, `%73${id.slice(1)}`);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    assert.equal(partner.submissions.get(id)?.status, 'confirmed');

    const unknown = await confirm(partner.url, 'sub_999999');
    assert.equal(unknown.status, 404);
    const get = await call(partner.url, 'GET', `/submissions/${id}/confirm`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    assert.deepEqual(trail(), [
      ['submit', 201, true, undefined],
      ['confirm', 200, true, undefined],
      ['confirm', 200, false, undefined],
      ['confirm', 404, false, undefined],
      ['confirm', 405, false, undefined],
    ]);
    const confirms = partner.ledger.entries({ action: 'confirm' });
    assert.deepEqual(
      confirms.map((e) => [e.submissionId, e.reference]),
      [
        [id, 'order-2'],
        [id, 'order-2'],
        ['sub_999999', undefined],
        [id, undefined],
      ],
    );
  });

  void it('void: compensates a submitted or confirmed submission once; confirm after void is 409', async () => {
    const a = (await submit(partner.url, 'order-3')).body.id ?? '';
    const b = (await submit(partner.url, 'order-3')).body.id ?? '';
    await confirm(partner.url, b);

    const voided = await voidIt(partner.url, a);
    assert.equal(voided.status, 200);
    assert.equal(voided.body.status, 'voided');
    assert.ok(!Number.isNaN(Date.parse(voided.body.voidedAt ?? '')));
    const again = await voidIt(partner.url, a);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, voided.body);

    const voidedConfirmed = await voidIt(partner.url, b);
    assert.equal(voidedConfirmed.body.status, 'voided');
    assert.ok(voidedConfirmed.body.confirmedAt, 'keeps its confirmedAt');

    const conflict = await confirm(partner.url, a);
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.error, 'voided');
    assert.equal((await voidIt(partner.url, 'nope')).status, 404);
    assert.equal((await call(partner.url, 'DELETE', `/submissions/${a}/void`)).status, 405);

    assert.deepEqual(
      partner.submissions.list().map((s) => [s.id, s.status]),
      [
        [a, 'voided'],
        [b, 'voided'],
      ],
    );
    assert.equal(partner.submissions.live('order-3').length, 0);
    assert.deepEqual(
      partner.ledger.entries({ action: 'void' }).map((e) => [e.submissionId, e.status, e.effect]),
      [
        [a, 200, true],
        [a, 200, false],
        [b, 200, true],
        ['nope', 404, false],
        [a, 405, false],
      ],
      'the second void of a has no effect',
    );
    assert.equal(partner.ledger.count({ action: 'confirm', status: 409 }), 1);
  });

  void it('lookup: every submission of a reference, any status, oldest first; 400 without a reference', async () => {
    const a = (await submit(partner.url, 'ref-x', { n: 1 })).body.id ?? '';
    await submit(partner.url, 'ref-other');
    const b = (await submit(partner.url, 'ref-x')).body.id ?? '';
    await voidIt(partner.url, a);

    const found = await lookup(partner.url, 'ref-x');
    assert.equal(found.status, 200);
    const subs = found.body.submissions ?? [];
    assert.deepEqual(
      subs.map((s) => [s.id, s.reference, s.status, s.summary]),
      [
        [a, 'ref-x', 'voided', { n: 1 }],
        [b, 'ref-x', 'submitted', undefined],
      ],
    );
    assert.deepEqual((await lookup(partner.url, 'ref-none')).body, { submissions: [] });
    for (const path of ['/submissions', '/submissions?reference=']) {
      const res = await call(partner.url, 'GET', path);
      assert.equal(res.status, 400, path);
    }
    assert.deepEqual(
      partner.ledger.entries({ action: 'lookup' }).map((e) => [e.reference, e.status, e.effect]),
      [
        ['ref-x', 200, false],
        ['ref-none', 200, false],
        [undefined, 400, false],
        [undefined, 400, false],
      ],
    );
    assert.equal(partner.ledger.count({ reference: 'ref-x' }), 4, 'two submits, a void and a lookup');
  });

  void it('before + status: answers the status (with Retry-After) and creates nothing', async () => {
    partner.faults.add({ route: 'submissions', kind: 'status', status: 503, retryAfter: '2' });
    const res = await submit(partner.url, 'order-4');
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '2');
    assert.equal(res.body.error, 'injected_fault');
    assert.equal(partner.submissions.list().length, 0);
    assert.equal((await submit(partner.url, 'order-4')).status, 201, 'the fault expired');
    assert.deepEqual(trail(), [
      ['submit', 503, false, 'status'],
      ['submit', 201, true, undefined],
    ]);
  });

  void it('after + status: the effect happens although the client sees an error', async () => {
    partner.faults.add({
      route: 'submissions',
      kind: 'status',
      status: 500,
      phase: 'after',
      action: 'submit',
    });
    const res = await submit(partner.url, 'order-5');
    assert.equal(res.status, 500);
    assert.equal(res.body.error, 'injected_fault');
    const stored = partner.submissions.byReference('order-5');
    assert.equal(stored.length, 1);
    const [entry] = partner.ledger.entries({ action: 'submit' });
    assert.deepEqual(
      [entry?.status, entry?.effect, entry?.fault, entry?.submissionId],
      [500, true, 'status', stored[0]?.id],
    );

    partner.faults.add({
      route: 'submissions',
      kind: 'status',
      status: 502,
      phase: 'after',
      action: 'confirm',
    });
    assert.equal((await confirm(partner.url, stored[0]?.id ?? '')).status, 502);
    assert.equal(partner.submissions.get(stored[0]?.id ?? '')?.status, 'confirmed');
    assert.deepEqual(trail().at(-1), ['confirm', 502, true, 'status']);
  });

  void it('before + reset: no response and no effect; after + reset: the effect stays, the answer is lost', async () => {
    partner.faults.add({ route: 'submissions', kind: 'reset' });
    await assert.rejects(submit(partner.url, 'order-6'));
    assert.equal(partner.submissions.list().length, 0);

    partner.faults.add({ route: 'submissions', kind: 'reset', phase: 'after' });
    await assert.rejects(submit(partner.url, 'order-6'));
    const [created] = partner.submissions.byReference('order-6');
    assert.equal(created?.status, 'submitted');

    partner.faults.add({ route: 'submissions', kind: 'reset', phase: 'after', action: 'void' });
    await assert.rejects(voidIt(partner.url, created?.id ?? ''));
    assert.equal(partner.submissions.get(created?.id ?? '')?.status, 'voided');
    assert.deepEqual(trail(), [
      ['submit', 0, false, 'reset'],
      ['submit', 0, true, 'reset'],
      ['void', 0, true, 'reset'],
    ]);
    assert.equal(partner.ledger.entries()[1]?.submissionId, created?.id);
  });

  void it('before + delay: answers normally after the wait when the client stays', async () => {
    partner.faults.add({ route: 'submissions', kind: 'delay', delayMs: 150 });
    const started = Date.now();
    const res = await submit(partner.url, 'order-7');
    assert.ok(Date.now() - started >= 140, `answered after ${Date.now() - started} ms`);
    assert.equal(res.status, 201);
    assert.deepEqual(
      partner.submissions.list().map((s) => s.id),
      [res.body.id],
    );
    assert.deepEqual(trail(), [['submit', 201, true, 'delay']]);
  });

  void it('before + delay: a client that times out during the wait leaves no effect, only a 499 entry', async () => {
    partner.faults.add({ route: 'submissions', kind: 'delay', delayMs: 300 });
    await assert.rejects(submit(partner.url, 'order-8', undefined, AbortSignal.timeout(100)), {
      name: 'TimeoutError',
    });
    await sleep(400);
    assert.equal(partner.submissions.list().length, 0, 'the request never reached processing');
    assert.deepEqual(trail(), [['submit', 499, false, 'client_closed']]);
    assert.equal(partner.ledger.entries()[0]?.reference, 'order-8');
    assert.equal(partner.ledger.entries()[0]?.late, undefined, 'late effects are off by default');
  });

  void it('late effects: a client that times out during a before-delay still gets its submission, and the ledger says so', async () => {
    const late = await startPartner({ port: 0, lateEffectMs: 1_000 });
    try {
      late.faults.add({ route: 'submissions', kind: 'delay', delayMs: 300 });
      await assert.rejects(submit(late.url, 'order-late', undefined, AbortSignal.timeout(100)), {
        name: 'TimeoutError',
      });
      await waitFor(() => late.ledger.count() > 0, 'the late entry');
      const [created, ...others] = late.submissions.byReference('order-late');
      assert.equal(created?.status, 'submitted', 'applied when the delay ended');
      assert.equal(others.length, 0);
      assert.deepEqual(
        late.ledger.entries().map((e) => [e.action, e.status, e.fault, e.effect, e.late, e.submissionId]),
        [['submit', 499, 'client_closed', true, true, created?.id]],
        'one entry: the client left, the effect happened late',
      );
    } finally {
      await late.close();
    }
  });

  void it('late effects: a fault overrides the server; a window shorter than the rest of the delay drops the request', async () => {
    // This partner has no window of its own: the fault's applies.
    const { body: created } = await submit(partner.url, 'order-late-2');
    partner.ledger.clear();
    partner.faults.add({
      route: 'submissions',
      kind: 'delay',
      delayMs: 300,
      lateEffectMs: 1_000,
      action: 'confirm',
    });
    await assert.rejects(confirm(partner.url, created.id ?? '', AbortSignal.timeout(100)), {
      name: 'TimeoutError',
    });
    await waitFor(() => partner.ledger.count() > 0, 'the late entry');
    assert.equal(partner.submissions.get(created.id ?? '')?.status, 'confirmed');
    assert.deepEqual(
      partner.ledger.entries().map((e) => [e.action, e.status, e.fault, e.effect, e.late]),
      [['confirm', 499, 'client_closed', true, true]],
    );

    partner.ledger.clear();
    partner.faults.add({ route: 'submissions', kind: 'delay', delayMs: 700, lateEffectMs: 100 });
    await assert.rejects(submit(partner.url, 'order-late-3', undefined, AbortSignal.timeout(100)), {
      name: 'TimeoutError',
    });
    await waitFor(() => partner.ledger.count() > 0, 'the 499 entry');
    await sleep(800);
    assert.equal(
      partner.submissions.byReference('order-late-3').length,
      0,
      'left too early for a late effect',
    );
    assert.deepEqual(
      partner.ledger.entries().map((e) => [e.action, e.status, e.fault, e.effect, e.late]),
      [['submit', 499, 'client_closed', false, undefined]],
    );
  });

  void it('after + delay: the effect happens at once and stays when the client times out', async () => {
    partner.faults.add({ route: 'submissions', kind: 'delay', delayMs: 600, phase: 'after' });
    await assert.rejects(submit(partner.url, 'order-9', undefined, AbortSignal.timeout(200)), {
      name: 'TimeoutError',
    });
    const [created] = partner.submissions.byReference('order-9');
    assert.equal(created?.status, 'submitted', 'created before the client gave up');
    await sleep(500);
    assert.equal(partner.submissions.list().length, 1);
    assert.deepEqual(trail(), [['submit', 499, true, 'client_closed']]);
    assert.equal(partner.ledger.entries()[0]?.submissionId, created?.id);

    partner.faults.add({
      route: 'submissions',
      kind: 'delay',
      delayMs: 150,
      phase: 'after',
      action: 'confirm',
    });
    const started = Date.now();
    const confirmed = await confirm(partner.url, created?.id ?? '');
    assert.ok(Date.now() - started >= 140);
    assert.equal(confirmed.status, 200);
    assert.equal(confirmed.body.status, 'confirmed');
    assert.deepEqual(trail().at(-1), ['confirm', 200, true, 'delay']);
  });

  void it('matches action and reference (the target submission’s for confirm/void); lookups fault before', async () => {
    const a = (await submit(partner.url, 'ref-a')).body.id ?? '';
    const b = (await submit(partner.url, 'ref-b')).body.id ?? '';
    partner.faults.add({
      route: 'submissions',
      kind: 'status',
      status: 503,
      action: 'void',
      reference: 'ref-b',
    });
    assert.equal((await voidIt(partner.url, a)).status, 200);
    assert.equal((await confirm(partner.url, b)).status, 200);
    assert.equal((await submit(partner.url, 'ref-b')).status, 201);
    assert.equal(partner.faults.list()[0]?.seen, 0, 'other actions and references are not counted');
    assert.equal((await voidIt(partner.url, b)).status, 503);
    assert.equal(partner.submissions.get(b)?.status, 'confirmed');

    partner.faults.add({ route: 'submissions', kind: 'status', status: 429, action: 'lookup' });
    assert.equal((await lookup(partner.url, 'ref-a')).status, 429);
    assert.equal((await lookup(partner.url, 'ref-a')).status, 200);

    partner.faults.add({ route: 'submissions', kind: 'status', status: 500, times: 5 });
    assert.equal(
      (await fetch(`${partner.url}/sources/acme/records?date=2024-03-01`)).status,
      200,
      'submissions faults leave the records route alone',
    );
    assert.equal(partner.faults.list()[0]?.seen, 0);
    partner.faults.clear();
    partner.faults.add({ kind: 'status', status: 500, times: 5 });
    assert.equal((await submit(partner.url, 'ref-c')).status, 201, 'records faults leave submissions alone');
  });

  void it('rejects invalid submissions faults and submissions matchers on other routes', async () => {
    const cases: [object, RegExp][] = [
      [{ kind: 'reset', phase: 'after' }, /"phase" needs route "submissions"/],
      [{ route: 'records', kind: 'reset', phase: 'before' }, /"phase" needs route "submissions"/],
      [{ route: 'events', kind: 'reset', phase: 'after' }, /"phase" needs route "submissions"/],
      [
        { route: 'submissions', kind: 'status', status: 500, phase: 'after', action: 'lookup' },
        /phase "after" is not valid with action "lookup"/,
      ],
      [{ route: 'submissions', kind: 'truncate' }, /route "submissions" takes only kinds/],
      [{ route: 'submissions', kind: 'malformed' }, /route "submissions" takes only kinds/],
      [{ route: 'submissions', kind: 'schema' }, /route "submissions" takes only kinds/],
      [{ kind: 'reset', action: 'submit' }, /"action" and "reference" need route "submissions"/],
      [
        { route: 'events', kind: 'reset', reference: 'r' },
        /"action" and "reference" need route "submissions"/,
      ],
      [{ route: 'submissions', kind: 'reset', sourceId: 'acme' }, /match records requests only/],
      [{ route: 'submissions', kind: 'reset', eventId: 'e-1' }, /need route "events"/],
      [{ route: 'submissions', kind: 'reset', action: 'cancel' }, /action/],
      [{ route: 'submissions', kind: 'reset', phase: 'during' }, /phase/],
      [{ route: 'submissions', kind: 'reset', reference: '' }, /reference/],
      [{ kind: 'delay', delayMs: 10, lateEffectMs: 10 }, /"lateEffectMs" needs route "submissions"/],
      [{ route: 'submissions', kind: 'reset', lateEffectMs: 10 }, /"lateEffectMs" needs .*kind "delay"/],
      [
        { route: 'submissions', kind: 'delay', delayMs: 10, phase: 'after', lateEffectMs: 10 },
        /"lateEffectMs" needs .*phase "before"/,
      ],
      [{ route: 'submissions', kind: 'delay', delayMs: 10, lateEffectMs: -1 }, /lateEffectMs/],
    ];
    for (const [spec, message] of cases) {
      const res = await fetch(`${partner.url}/_admin/faults`, { method: 'POST', body: JSON.stringify(spec) });
      assert.equal(res.status, 400, JSON.stringify(spec));
      const body = (await res.json()) as { error: string; message: string };
      assert.equal(body.error, 'invalid_fault');
      assert.match(body.message, message, JSON.stringify(spec));
    }
    assert.equal(partner.faults.list().length, 0);
    assert.throws(() => partner.faults.add({ kind: 'delay', delayMs: 1, phase: 'after' }), {
      name: 'InvalidFaultSpecError',
    });

    const created = await fetch(`${partner.url}/_admin/faults`, {
      method: 'POST',
      body: JSON.stringify({
        route: 'submissions',
        kind: 'delay',
        delayMs: 10,
        phase: 'after',
        action: 'void',
        reference: 'r',
      }),
    });
    assert.equal(created.status, 201);
    assert.deepEqual(
      partner.faults.list().map((f) => [f.route, f.phase, f.action, f.reference]),
      [['submissions', 'after', 'void', 'r']],
    );
  });

  void it('admin API: lists (with summaries) and clears submissions, filters the ledger; never recorded', async () => {
    const a = (await submit(partner.url, 'adm-1', { k: 'v' })).body.id ?? '';
    await submit(partner.url, 'adm-2');
    await voidIt(partner.url, a);

    type Listing = { submissions: Submission[] };
    const all = (await (await fetch(`${partner.url}/_admin/submissions`)).json()) as Listing;
    assert.deepEqual(
      all.submissions.map((s) => [s.reference, s.status, s.summary]),
      [
        ['adm-1', 'voided', { k: 'v' }],
        ['adm-2', 'submitted', undefined],
      ],
    );
    const one = (await (await fetch(`${partner.url}/_admin/submissions?reference=adm-2`)).json()) as Listing;
    assert.deepEqual(
      one.submissions.map((s) => s.reference),
      ['adm-2'],
    );
    assert.deepEqual(
      partner.submissions.live().map((s) => s.reference),
      ['adm-2'],
    );

    const ledger = (await (
      await fetch(`${partner.url}/_admin/ledger?action=submit&reference=adm-1`)
    ).json()) as { entries: { submissionId?: string }[] };
    assert.deepEqual(
      ledger.entries.map((e) => e.submissionId),
      [a],
    );
    assert.equal((await fetch(`${partner.url}/_admin/ledger?action=cancel`)).status, 400);

    assert.equal((await fetch(`${partner.url}/_admin/submissions`, { method: 'POST' })).status, 405);
    const cleared = await fetch(`${partner.url}/_admin/submissions`, { method: 'DELETE' });
    assert.deepEqual(await cleared.json(), { cleared: 2 });
    assert.deepEqual(partner.submissions.list(), []);
    assert.equal(partner.ledger.count(), 3, 'admin requests are neither recorded nor faulted');
  });
});

// A broken close() hangs rather than failing: the timeout turns that into a failure.
void describe('partner: submissions and close', { timeout: 5000 }, () => {
  void it('a before-delay cancelled by close() has no effect and no entry; an after-delay keeps its effect', async () => {
    for (const phase of ['before', 'after'] as const) {
      const partner = await startPartner({ port: 0 });
      partner.faults.add({ route: 'submissions', kind: 'delay', delayMs: 2000, phase });
      const pending = submit(partner.url, 'closing');
      while (partner.faults.list().length > 0) await sleep(5);
      const started = Date.now();
      await partner.close();
      assert.ok(Date.now() - started < 1000, `close took ${Date.now() - started} ms`);
      await assert.rejects(pending);
      await sleep(50);
      if (phase === 'before') {
        assert.equal(partner.submissions.list().length, 0);
        assert.equal(partner.ledger.count(), 0);
      } else {
        assert.equal(partner.submissions.list().length, 1);
        assert.deepEqual(
          partner.ledger.entries().map((e) => [e.status, e.effect, e.fault]),
          [[0, true, 'delay']],
        );
      }
    }
  });

  void it('a late effect still pending when close() comes is dropped; the client that left keeps its 499', async () => {
    const partner = await startPartner({ port: 0, lateEffectMs: 5_000 });
    partner.faults.add({ route: 'submissions', kind: 'delay', delayMs: 2_000 });
    await assert.rejects(submit(partner.url, 'closing-late', undefined, AbortSignal.timeout(100)));
    await sleep(50);
    // Asserted after close(): a failing assertion must not leave the server running.
    const beforeClose = partner.ledger.count();
    await partner.close();
    assert.equal(beforeClose, 0, 'a late request is recorded when its processing ends');
    assert.equal(partner.submissions.list().length, 0);
    assert.deepEqual(
      partner.ledger.entries().map((e) => [e.status, e.effect, e.fault, e.late]),
      [[499, false, 'client_closed', undefined]],
    );
  });

  void it('startPartner refuses a lateEffectMs that is not an integer in 0..600000', async () => {
    for (const lateEffectMs of [-1, 1.5, 600_001, Number.NaN]) {
      await assert.rejects(startPartner({ port: 0, lateEffectMs }), /lateEffectMs must be an integer/);
    }
  });
});
