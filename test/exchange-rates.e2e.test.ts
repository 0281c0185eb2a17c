// The second job, end to end through the real engine (job test kit: shared Temporal, a cloned
// PostgreSQL, the demo partner over sockets): its own table holds one row per natural key, its
// events are one per page, its journal entry is posted once, and undone when the run fails.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';

const SECRET_REF = 'DF_SECRET_FX_E2E';
const PAIRS = 56;

let kit: JobKit;
let partner: PartnerServer;

before(async () => {
  partner = await startPartner({ port: 0, ratesToken: 'tok-fx-e2e' });
  kit = await jobTestKit({ secrets: { [SECRET_REF]: 'tok-fx-e2e' } });
});

after(async () => {
  await kit?.close();
  await partner?.close();
});

const fxSource = (id: string, extra: { downstream?: boolean; pageSize?: number } = {}) =>
  kit.addSource({
    id,
    job: 'exchange-rates',
    baseUrl: partner.url,
    credentialsRef: SECRET_REF,
    config: { account: 'fx:test' },
    pageSize: 25,
    ...extra,
  });

describe('exchange-rates job end to end', () => {
  it('stores one row per (base, quote, date), one event per page, and posts one journal entry', async () => {
    await fxSource('fxe2e-a', { downstream: true });
    const run = await kit.run('fxe2e-a', '2026-11-20');
    assert.equal(run.status, 'succeeded', `run ended ${run.status} (${run.errorType})`);
    assert.equal(run.row.workflowId, 'fetch/exchange-rates/fxe2e-a/2026-11-20');
    assert.equal(await kit.prisma.exchangeRate.count({ where: { sourceId: 'fxe2e-a' } }), PAIRS);
    const pages = run.events.filter((e) => e.topic === 'fx.rates_stored');
    assert.equal(pages.length, 3); // 25 + 25 + 6
    assert.equal(new Set(pages.flatMap((e) => (e.payload as { pairs: string[] }).pairs)).size, PAIRS);
    assert.deepEqual(
      run.actions.map((a) => [a.action, a.state, a.attempts]),
      [['post-journal', 'confirmed', 1]],
    );
    const entries = partner.journal.list().filter((e) => e.reference.startsWith('exchange-rates:fxe2e-a:'));
    assert.equal(entries.length, 1);
    assert.equal(entries[0]?.status, 'posted');
    assert.deepEqual(
      entries[0]?.lines.map((l) => l.account),
      ['fx:test', 'fx:suspense'],
    );
  });

  it('a second date updates nothing of the first and a re-run of a date adds no row', async () => {
    await fxSource('fxe2e-b');
    const first = await kit.run('fxe2e-b', '2026-11-21');
    assert.equal(first.status, 'succeeded');
    const second = await kit.run('fxe2e-b', '2026-11-22');
    assert.equal(second.status, 'succeeded');
    assert.equal(await kit.prisma.exchangeRate.count({ where: { sourceId: 'fxe2e-b' } }), 2 * PAIRS);
    // The succeeded key is joined, not run again: no new row, no new event.
    const again = await kit.run('fxe2e-b', '2026-11-21');
    assert.equal(again.row.id, first.row.id);
    assert.equal(again.events.length, first.events.length);
    assert.equal(await kit.prisma.exchangeRate.count({ where: { sourceId: 'fxe2e-b' } }), 2 * PAIRS);
  });

  it('a source config the job refuses fails the run as InvalidInput with a dead letter, asking the partner nothing', async () => {
    await kit.addSource({
      id: 'fxe2e-c',
      job: 'exchange-rates',
      baseUrl: partner.url,
      credentialsRef: SECRET_REF,
      config: { acount: 'typo' },
    });
    const before = partner.ledger.entries().length;
    const run = await kit.run('fxe2e-c', '2026-11-20');
    assert.equal(run.status, 'dead_lettered');
    assert.equal(run.errorType, 'InvalidInput');
    assert.match(run.row.errorMessage ?? '', /config does not fit job 'exchange-rates'/);
    assert.equal(await kit.prisma.deadLetter.count({ where: { sourceId: 'fxe2e-c' } }), 1);
    assert.equal(partner.ledger.entries().length, before);
  });
});
