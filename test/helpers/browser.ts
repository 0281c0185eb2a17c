/**
 * Headless Chromium for browser tests: Debian's `chromium` driven by playwright-core (Playwright's
 * own browser download does not work on the machines this project runs on). Installs the Debian
 * package when it is missing and this process may (root with apt-get); otherwise fails saying how.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { type Browser, chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
let installing: Promise<void> | undefined;

async function ensureChromium(): Promise<void> {
  if (existsSync(CHROMIUM)) return;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)`);
  }
  await promisify(execFile)('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: 300_000,
  });
}

/** Launches headless Chromium with the flags this closed network needs. Close it when done. */
export async function launchChromium(): Promise<Browser> {
  await (installing ??= ensureChromium());
  // Playwright gives every launch a fresh, empty profile of its own.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
