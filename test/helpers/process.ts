import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { PROJECT_ROOT } from '../../runtime/config.ts';

/** A real child process (one of the project's entry points, or a server a test owns), with its output collected. */
export interface Spawned {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first match of `pattern` in the output; rejects when the process exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** Sends `signal` and resolves with the exit code (SIGKILL after `timeoutMs`, then rejects). */
  stop(signal: NodeJS.Signals, timeoutMs: number): Promise<number | null>;
  /**
   * Settles once the process has exited and its output is fully read ('close', not 'exit'), with
   * its exit code or the signal that killed it. Listening from the start: a process that dies at
   * once still reports how.
   */
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `node --import tsx <args>` in the project root with only PATH/HOME plus `env`. */
export function spawnTs(args: string[], env: Record<string, string>): Spawned {
  return spawnProgram(process.execPath, ['--import', 'tsx', ...args], {
    // Many processes run at once: each gets its metrics endpoint on a free port (not 9464).
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    DURABLE_FETCH_METRICS_PORT: '0',
    // The run's workflow bundle (test/helpers/services.ts): a spawned worker need not bundle. A
    // worker that traces bundles its own, with OpenTelemetry's workflow interceptors.
    ...(process.env.DF_TEST_WORKFLOW_BUNDLE && !env.OTEL_EXPORTER_OTLP_ENDPOINT
      ? { DURABLE_FETCH_WORKFLOW_BUNDLE: process.env.DF_TEST_WORKFLOW_BUNDLE }
      : {}),
    ...env,
  });
}

/** Spawns `command args` in the project root with exactly `env` as its environment. */
export function spawnProgram(command: string, args: string[], env: Record<string, string>): Spawned {
  const child = spawn(command, args, { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const ended = (once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>).then(
    ([code, signal]) => ({ code, signal }),
  );
  return {
    child,
    ended,
    output: () => text,
    waitFor(pattern, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(text);
          if (m) finish(() => resolve(m));
        };
        const timer = setTimeout(
          () => finish(() => reject(new Error(`timed out waiting for ${pattern}:\n${text}`))),
          timeoutMs,
        );
        const finish = (fn: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          fn();
        };
        listeners.add(check);
        void exited.then(() => finish(() => reject(new Error(`exited before ${pattern}:\n${text}`))));
        check();
      });
    },
    async stop(signal, timeoutMs) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const [code] = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Rejects with `describe()` when `promise` has not settled after `ms` (so `finally` blocks run). */
export async function within<T>(promise: Promise<T>, ms: number, describe: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${describe()}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A real `durable-fetch worker` process with only `env` (plus PATH/HOME) as its environment. */
export function spawnWorker(env: Record<string, string>): Spawned {
  return spawnTs(['bin/durable-fetch.js', 'worker'], env);
}

/** The URL of a spawned worker's /metrics endpoint, once it has printed it. */
export async function metricsUrlOf(worker: Spawned): Promise<string> {
  const [, url] = await worker.waitFor(/metrics at (http:\/\/\S+)/, 60_000);
  if (!url) throw new Error('the worker printed no metrics URL');
  return url;
}
