/**
 * The repository's import graph, read from the source with TypeScript's own pre-processor (static
 * imports and exports, `import type`, dynamic `import()`), and the circles in it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Repository path → the repository paths it imports (relative specifiers only). */
export type ImportGraph = Map<string, string[]>;

const SKIPPED = new Set(['node_modules', 'generated', '.data', '.tools', '.build', '.git']);

/** Every `.ts` file under `folders` (repository paths), sorted. */
export function sourceFiles(root: string, folders: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!SKIPPED.has(entry.name)) walk(rel);
      } else if (entry.name.endsWith('.ts')) out.push(rel);
    }
  };
  for (const folder of folders) walk(folder);
  return out.sort();
}

/** The relative imports of each file, resolved to repository paths. */
export function importGraph(root: string, files: readonly string[]): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(path.join(root, file), 'utf8'), true, true);
    const targets = info.importedFiles
      .map((f) => f.fileName)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The circles of `graph`: its strongly connected components of more than one file (Tarjan). */
export function circles(graph: ImportGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}
