/**
 * CPU and memory of other processes on this machine, read from /proc (Linux): the bench charges a
 * scenario's CPU to the worker and to the Temporal server separately, by their pids.
 */
import { readdir, readFile, readlink } from 'node:fs/promises';

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** User + system CPU time `pid` has used so far, in ms. */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / TICKS_PER_SECOND;
}

/**
 * CPU time the whole machine has spent so far (every core's user, nice, system, irq, softirq and
 * steal time from /proc/stat), in ms: what all processes of a scenario took together, the ones
 * no pid is charged with (PostgreSQL, the partner, the kernel's network stack) included.
 */
export async function machineCpuMs(): Promise<number> {
  const stat = await readFile('/proc/stat', 'utf8');
  // First line: `cpu  user nice system idle iowait irq softirq steal guest guest_nice`.
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = (stat.split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1000) / TICKS_PER_SECOND;
}

/**
 * CPU time every process named `comm` has used so far, in ms, with what their exited children
 * used (a PostgreSQL backend that ended is counted in its postmaster's children's time).
 */
export async function cpuMsOfCommand(comm: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== comm) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime, cstime: fields 14-17 of /proc/<pid>/stat.
    total += fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0);
  }
  return (total * 1000) / TICKS_PER_SECOND;
}

/** Resident memory of `pid` now, in MiB. */
export async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** The pid of the process listening on TCP `port` (IPv4 or IPv6), or undefined. */
export async function pidListeningOn(port: number): Promise<number | undefined> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is HEX_IP:HEX_PORT; state 0A is LISTEN; the inode is column 10.
      if (cols[3] === '0A' && Number.parseInt(cols[1]?.split(':')[1] ?? '', 16) === port && cols[9]) {
        inodes.add(cols[9]);
      }
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fds = await readdir(`/proc/${entry}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      const link = await readlink(`/proc/${entry}/fd/${fd}`).catch(() => '');
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      if (inode && inodes.has(inode)) return Number(entry);
    }
  }
  return undefined;
}

/** Samples the peak RSS of `pids` every 100 ms until `stop()`, which returns each peak in MiB. */
export function peakRss(pids: number[]): { stop: () => number[] } {
  const peaks = pids.map(() => 0);
  const timer = setInterval(() => {
    pids.forEach((pid, i) => {
      void rssMiB(pid).then(
        (mib) => (peaks[i] = Math.max(peaks[i] ?? 0, mib)),
        () => undefined,
      );
    });
  }, 100);
  return {
    stop: () => {
      clearInterval(timer);
      return peaks.map((p) => Math.round(p));
    },
  };
}
