import { resolveTemporalCli } from './worker/temporal-cli.ts';
const t = Date.now();
const r = await resolveTemporalCli({ projectRoot: '/tmp/df-venv-probe', log: (l) => console.log(`[${process.pid}] ${l}`) });
console.log(`[${process.pid}]`, r, Date.now() - t, 'ms');
