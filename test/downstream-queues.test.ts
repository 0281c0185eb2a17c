// R8: a downstream's server-side limits are Temporal's task-queue config of its own activity queue
// (`<task queue>-ds-<downstream>`): the queue's rate (callsPerSecond), each source's default rate
// (sourceCallsPerSecond) and the sources' weights, set with UpdateTaskQueueConfig, read back as
// the server holds them, and unset when the settings leave them out. On the shared dev server
// (started with fairness on: worker/stack/temporal-dev-server.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { applyDownstreamQueueConfig, describeDownstreamQueueConfig } from '../client/downstream-queues.ts';
import { type DownstreamSettingsInput, downstreamSettingsSchema } from '../db/ledger/downstreams.ts';
import { testClient } from './helpers/temporal.ts';

const NAMESPACE = 'default';
let client: Client;

/** An isolated downstream's settings: Temporal's limits apply only to a queue of its own. */
const settings = (input: DownstreamSettingsInput) =>
  downstreamSettingsSchema.parse({ isolated: true, ...input });

before(async () => {
  client = await testClient();
});
after(async () => {
  await client?.connection.close();
});

describe('downstream task-queue config (R8)', () => {
  it('sets the queue rate, the per-source rate and the weights on the downstream queue; says why and who', async () => {
    const taskQueue = `dsq-${randomUUID()}`;
    const [result] = await applyDownstreamQueueConfig(
      client,
      NAMESPACE,
      taskQueue,
      [
        settings({
          id: 'partner-a',
          isolated: true,
          callsPerSecond: 5,
          sourceCallsPerSecond: 2,
          sourceWeights: { s1: 3 },
        }),
      ],
      { reason: 'test apply', identity: 'tester' },
    );
    assert.ok(result?.applied, JSON.stringify(result));
    assert.equal(result.changed, true);
    assert.equal(result.inForce, true, 'the activity queue reports the written config');
    assert.equal(result.taskQueue, `${taskQueue}-ds-partner-a`);

    const read = await describeDownstreamQueueConfig(client, NAMESPACE, taskQueue, 'partner-a');
    assert.equal(read.taskQueue, `${taskQueue}-ds-partner-a`);
    assert.equal(read.queueLimit?.perSecond, 5);
    assert.equal(read.queueLimit?.setBy, 'tester');
    assert.match(read.queueLimit?.reason ?? '', /^test apply: downstream 'partner-a' callsPerSecond 5$/);
    assert.equal(read.sourceLimit?.perSecond, 2);
    assert.match(read.sourceLimit?.reason ?? '', /sourceCallsPerSecond 2/);
    assert.deepEqual(read.sourceWeights, { s1: 3 });
    assert.deepEqual(read.effective, { perSecond: 5, source: 'api' }, 'the API limit is the one in force');
  });

  it('leaves a queue that already holds the settings untouched, and unsets what the settings leave out', async () => {
    const taskQueue = `dsq-${randomUUID()}`;
    const first = settings({ id: 'partner-b', callsPerSecond: 0.5, sourceWeights: { s1: 2, s2: 0.25 } });
    await applyDownstreamQueueConfig(client, NAMESPACE, taskQueue, [first], { identity: 'first' });
    const [again] = await applyDownstreamQueueConfig(client, NAMESPACE, taskQueue, [first], {
      identity: 'second',
    });
    assert.ok(again?.applied);
    assert.equal(again.changed, false, 'same settings: no update');
    assert.equal(again.config.queueLimit?.perSecond, 0.5, 'a rate below 1 per second survives the float');
    assert.equal(again.config.queueLimit?.setBy, 'first', 'the second apply wrote nothing');

    const [unset] = await applyDownstreamQueueConfig(
      client,
      NAMESPACE,
      taskQueue,
      [settings({ id: 'partner-b', sourceWeights: { s2: 4 } })],
      { identity: 'third' },
    );
    assert.ok(unset?.applied);
    assert.equal(unset.changed, true);
    // Temporal copies a written config to the activity queue afterwards: on a loaded machine a
    // read right after the write showed the old limit. The apply reads back until it is in force.
    assert.equal(unset.inForce, true, JSON.stringify(unset.config));
    assert.equal(unset.config.queueLimit, undefined, 'callsPerSecond left out: the limit is removed');
    assert.equal(unset.config.sourceLimit, undefined);
    assert.deepEqual(unset.config.sourceWeights, { s2: 4 }, "s1's override removed, s2's replaced");
  });

  it("reports a downstream the server refuses with the server's own error instead of throwing", async () => {
    const results = await applyDownstreamQueueConfig(client, `df-missing-${randomUUID()}`, 'q', [
      settings({ id: 'partner-c', callsPerSecond: 1 }),
    ]);
    assert.equal(results.length, 1);
    const [refused] = results;
    assert.ok(refused && !refused.applied);
    assert.match(refused.error, /namespace/i);
  });
});
