// Where the compiled CLI lives and whether it still matches its sources. Plain JavaScript with no
// dependency, because bin/durable-fetch.js runs it before deciding whether tsx is needed at all.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Bumped when the manifest's shape changes, so an older build is never read as a newer one. */
export const MANIFEST_VERSION = 1;

/**
 * @typedef {object} CliManifest
 * @property {number} version {@link MANIFEST_VERSION}
 * @property {string} root the checkout it was built from (a moved checkout must rebuild)
 * @property {string} dir the build's directory under `.build/cli/`
 * @property {[string, number, number][]} inputs every file the build read: path relative to
 *   `root`, mtimeMs and size as they were before it was read
 */

/** `.build/cli/` of the checkout at `root`, and its manifest file. */
/** @param {string} root */
export function cliBuildPaths(root) {
  const base = path.join(root, '.build', 'cli');
  return { base, manifest: path.join(base, 'manifest.json') };
}

/**
 * The compiled entry module (an absolute path) when the build at `root` is complete and every input
 * still has the mtime and size it had when the build read it; otherwise null. A missing, partial or
 * unreadable manifest counts as stale. Only stats files: cheap enough for every start.
 * @param {string} root
 * @returns {string | null}
 */
export function freshCliEntry(root) {
  const { base, manifest } = cliBuildPaths(root);
  /** @type {CliManifest} */
  let m;
  try {
    m = /** @type {CliManifest} */ (JSON.parse(readFileSync(manifest, 'utf8')));
  } catch {
    return null;
  }
  if (m?.version !== MANIFEST_VERSION || m.root !== root || !Array.isArray(m.inputs)) return null;
  for (const [file, mtimeMs, size] of m.inputs) {
    const s = statSync(path.join(root, file), { throwIfNoEntry: false });
    if (!s || s.mtimeMs !== mtimeMs || s.size !== size) return null;
  }
  const entry = path.join(base, m.dir, 'cli.js');
  return statSync(entry, { throwIfNoEntry: false }) ? entry : null;
}
