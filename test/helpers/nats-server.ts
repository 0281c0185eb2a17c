/**
 * A NATS server with JetStream of a test's own (Debian's `nats-server`, on a free loopback port,
 * its stream store in a folder of the test's), so a test can stop it hard and start it again on
 * the same store without touching the machine's shared server.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort } from '../../worker/process-utils.ts';

export interface NatsServer {
  url: string;
  /** Kills the server (SIGKILL: nothing flushed, as a crashed host); resolves once it is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store; resolves once it accepts clients. */
  start(): Promise<void>;
  /** The `Nats-Msg-Id` of every message `stream` holds, oldest first. */
  messageIds(stream: string): Promise<string[]>;
  close(): Promise<void>;
}

/** Where Debian puts the server; `NATS_SERVER` names another. */
function binary(): string {
  const configured = process.env.NATS_SERVER;
  if (configured) return configured;
  for (const candidate of ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server']) {
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(
    "nats-server not found: install Debian's nats-server package, or set NATS_SERVER to its path",
  );
}

export async function startNatsServer(storeDir: string): Promise<NatsServer> {
  const port = await freePort();
  const url = `nats://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let output = '';

  const start = async () => {
    output = '';
    const proc = spawn(binary(), ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`nats-server not ready in 30 s:\n${output}`)), 30_000);
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Server is ready')) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout?.on('data', read);
      proc.stderr?.on('data', read);
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`nats-server exited (${signal ?? code}) before it was ready:\n${output}`));
      });
    });
    await ready;
  };

  const kill = async () => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = once(proc, 'exit');
    proc.kill('SIGKILL');
    await gone;
  };

  await start();
  return {
    url,
    kill,
    start,
    async messageIds(stream) {
      const nc = await connect({ servers: url, name: 'durable-fetch-test' });
      try {
        const jsm = await jetstreamManager(nc);
        const { state } = await jsm.streams.info(stream);
        const ids: string[] = [];
        for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
          const message = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
          const id = message?.header.get('Nats-Msg-Id');
          if (id) ids.push(id);
        }
        return ids;
      } finally {
        await nc.close();
      }
    },
    close: kill,
  };
}
