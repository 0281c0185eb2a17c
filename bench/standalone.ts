/** Runs one bench section on its own (`tsx bench/<section>.ts [--quick]`), with its own stack. */
import { startTestServices } from '../test/helpers/services.ts';
import type { BenchOptions, BenchSection } from './report.ts';

export async function standalone(section: (opts: BenchOptions) => Promise<BenchSection>): Promise<void> {
  const say = (line: string) => console.log(`[bench] ${line}`);
  const services = await startTestServices(say);
  Object.assign(process.env, services.env);
  try {
    const result = await section({ quick: process.argv.includes('--quick'), say });
    console.table(result.rows);
    console.log(JSON.stringify(result));
  } finally {
    await services.stop();
  }
}
