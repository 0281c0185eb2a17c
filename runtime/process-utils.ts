/**
 * Helpers shared by the modules that run local servers (Temporal dev server, embedded PostgreSQL).
 */
import { open } from 'node:fs/promises';
import net from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). Another process may take it
 * before the caller binds it; callers that start servers report "address in use" clearly instead.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not determine a free port'));
      });
    });
  });
}

/**
 * True when something accepts TCP connections on `host:port` within `timeoutMs`. Never throws.
 */
export function isPortAccepting(port: number, host = '127.0.0.1', timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (result: boolean) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * True when a process with this pid exists (a zombie counts; EPERM — someone else's — counts).
 */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The last `lines` non-empty lines of a text file (reads at most its last 64 KiB), or '' when it
 * cannot be read. Never throws.
 */
export async function readTail(file: string, lines: number): Promise<string> {
  try {
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      const length = Math.min(size, 64 * 1024);
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, size - length);
      return buffer
        .toString('utf8')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .slice(-lines)
        .join('\n');
    } finally {
      await handle.close();
    }
  } catch {
    return '';
  }
}
