/**
 * A NATS server with JetStream of a test's own (Debian's `nats-server`, on a free loopback port,
 * its stream store in a folder of the test's), so a test can stop it hard and start it again on
 * the same store without touching the machine's shared server.
 */
import { existsSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort } from '../../runtime/process-utils.ts';
import { type Spawned, spawnProgram } from './process.ts';

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
  const command = binary();
  let server: Spawned | undefined;

  const start = async () => {
    server = spawnProgram(command, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir], {
      PATH: process.env.PATH ?? '',
    });
    await server.waitFor(/Server is ready/, 30_000);
  };

  const kill = async () => {
    await server?.stop('SIGKILL', 5_000);
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
