#!/usr/bin/env node
// Entry point of the `durable-fetch` command: loads the TypeScript CLI through tsx.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../client/cli.ts');
process.exitCode = await main(process.argv);
