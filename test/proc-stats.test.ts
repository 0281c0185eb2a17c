// The bench's CPU accounting (bench/proc-stats.ts, npm run bench's overhead section): the machine's
// CPU from /proc/stat and a command's from /proc/<pid>/stat must each count at least the CPU this
// process spends, whoever else shares the machine. CPU time, not wall time: a busy machine only
// adds to both sides of each comparison.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { cpuMs, cpuMsOfCommand, machineCpuMs } from '../bench/proc-stats.ts';

/** Burns `ms` of this process's own CPU (user + system), however long that takes on the clock. */
function burnCpu(ms: number): number {
  const start = process.cpuUsage();
  let spent = 0;
  while (spent < ms) {
    const used = process.cpuUsage(start);
    spent = (used.user + used.system) / 1000;
  }
  return spent;
}

// /proc counts in ticks of 10 ms: allow one tick per reading at each end.
const TICKS = 20;

describe('bench CPU accounting', () => {
  it("machineCpuMs counts at least this process's CPU spent between two readings", async () => {
    const before = await machineCpuMs();
    const spent = burnCpu(300);
    const after = await machineCpuMs();
    assert.ok(after - before >= spent - TICKS, `machine ${after - before} ms < own ${spent} ms`);
  });

  it('cpuMsOfCommand counts the processes of a name as cpuMs counts them by pid', async (t) => {
    // A name only this process has (Linux sets the command name from process.title), so that no
    // other process of the machine starting or ending moves the figure.
    const title = process.title;
    process.title = `df-cpu-${process.pid}`.slice(0, 15);
    t.after(() => {
      process.title = title;
    });
    const comm = (await readFile('/proc/self/comm', 'utf8')).trim();
    // A reading by name scans every process of the machine, and the scan itself costs this process
    // CPU (a read of each /proc/<pid>/stat, more of them on a busy machine) before and after it
    // reaches this process's own entry. So each reading by name is compared with the readings by
    // pid just before and just after it, not with one taken at another moment.
    const bracketed = async () => {
      const before = await cpuMs(process.pid);
      const byName = await cpuMsOfCommand(comm);
      const after = await cpuMs(process.pid);
      assert.ok(
        byName >= before - TICKS && byName <= after + TICKS,
        `by name ${byName} ms, by pid ${before}..${after} ms`,
      );
      return byName;
    };
    const byName0 = await bracketed();
    const spent = burnCpu(300);
    const byName1 = await bracketed();
    assert.ok(byName1 - byName0 >= spent - TICKS, `by name ${byName1 - byName0} ms < own ${spent} ms`);
    assert.equal(await cpuMsOfCommand('no-such-command-df'), 0);
  });
});
