/**
 * The history scenario of a run whose source's downstream is isolated (R8): its page fetches on
 * the downstream's own task queue, keyed by the source with its weight, carried across
 * continue-as-new by the resume state.
 */
import { launchFetch, prepareFetch } from '../client/start-fetch.ts';
import { downstreamSettingsSchema, rowOf } from '../db/ledger/downstreams.ts';
import { DATE, type Scenario, settled, source } from './history-scenario-steps.ts';

/** The isolated downstream of the recording, and the weight of its source there. */
export const HISTORY_DOWNSTREAM = 'hist-ds';
export const HISTORY_WEIGHT = 2;

export const isolated: Scenario = {
  name: 'isolated',
  async run(s) {
    const sourceId = 'hist-isolated';
    const settings = downstreamSettingsSchema.parse({
      id: HISTORY_DOWNSTREAM,
      isolated: true,
      maxConcurrentCalls: 2,
      sourceWeights: { [sourceId]: HISTORY_WEIGHT },
    });
    await s.ctx.prisma.downstream.create({ data: { id: settings.id, ...rowOf(settings) } });
    await source(s, sourceId, { downstream: HISTORY_DOWNSTREAM });
    // Two pages, one per execution: the second fetches on the queue its resume state names.
    const prepared = await prepareFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
    const started = await launchFetch(s.ctx, {
      ...prepared,
      input: { ...prepared.input, pagesPerExecution: 1 },
    });
    await settled(started.handle);
    return [{ name: 'fetch-records-isolated', workflowId: started.workflowId, runId: started.runId }];
  },
};
