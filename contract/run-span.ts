/**
 * The span of a run, as a traced worker's workflows report it through the `runSpan` sink
 * (workflows/trace-interceptors.ts → worker/worker.ts): plain data, made in the workflow.
 */
export interface RunSpan {
  traceId: string;
  spanId: string;
  /** The span that started the run (a client's start, a parent run), when it came with one. */
  parentSpanId?: string;
  /** W3C trace flags of the parent (`01` sampled), or `01` for a trace the run starts. */
  traceFlags: number;
  name: string;
  /** Workflow time, in ms since the epoch. */
  startMs: number;
  endMs: number;
  /** Whether the run's function threw (a failure or a cancellation; continue-as-new is no error). */
  failed: boolean;
  attributes: Record<string, string>;
}

/** The sink through which a workflow hands its run's span to its worker. */
export type RunSpanSinks = {
  runSpan: { ended(span: RunSpan): void };
};

/** The header that carries a span's W3C context to steps and child runs (Temporal's own name). */
export const TRACE_HEADER = '_tracer-data';
