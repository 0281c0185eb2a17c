// Prisma's DMMF for the project's Prisma schema (one file, or a folder of them: Prisma's multi-file
// schema), computed offline by the prisma-schema wasm module that ships inside the `prisma` CLI
// package: no `prisma generate`, no child process, no network.
import { readdir, readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

export interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: 'scalar' | 'enum' | 'object' | 'unsupported';
  type: string;
  isList: boolean;
  isRequired: boolean;
  isUpdatedAt: boolean;
  nativeType?: [string, string[]] | null;
  default?: unknown;
  relationFromFields?: string[];
  relationToFields?: string[];
  relationOnDelete?: string;
  relationOnUpdate?: string;
}
export interface DmmfModel {
  name: string;
  dbName: string | null;
  fields: DmmfField[];
}
interface DmmfIndex {
  model: string;
  type: 'id' | 'unique' | 'normal' | 'fulltext';
  dbName?: string | null;
  fields: { name: string }[];
}
export interface DmmfEnum {
  name: string;
  dbName?: string | null;
  values: { name: string; dbName: string | null }[];
}
export interface Dmmf {
  models: DmmfModel[];
  enums: DmmfEnum[];
  indexes: DmmfIndex[];
}

// Just the WebAssembly API used here: the project's `lib` (ES2023, no DOM) does not declare it.
interface WasmTable {
  grow(delta: number): number;
  get(index: number): unknown;
  set(index: number, value: unknown): void;
}
interface WasmApi {
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(module: object, imports: Record<string, Record<string, unknown>>): Promise<{ exports: object }>;
  Module: { imports(module: object): { module: string; name: string }[] };
}
const WebAssemblyApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

interface SchemaWasm {
  memory: { buffer: ArrayBuffer };
  __wbindgen_externrefs: WasmTable;
  __wbindgen_malloc(size: number, align: number): number;
  __wbindgen_free(ptr: number, size: number, align: number): void;
  __externref_table_dealloc(index: number): void;
  __wbindgen_start(): void;
  get_dmmf(ptr: number, len: number): [number, number, number, number];
}
let schemaWasm: Promise<SchemaWasm> | undefined;

/**
 * Instantiates prisma_schema_build_bg.wasm (the `@prisma/prisma-schema-wasm` build inside the
 * installed `prisma` package, the code `prisma generate` runs for getDMMF) with the four host
 * functions of its wasm-bindgen glue. Their names carry a hash, so they are matched by prefix; an
 * unknown import means a Prisma upgrade changed the ABI, and fails loudly here.
 */
async function loadSchemaWasm(): Promise<SchemaWasm> {
  const cliDir = path.dirname(createRequire(import.meta.url).resolve('prisma/package.json'));
  const module = await WebAssemblyApi.compile(
    await readFile(path.join(cliDir, 'build/prisma_schema_build_bg.wasm')),
  );
  const state: { wasm?: SchemaWasm } = {};
  const text = (ptr: number, len: number) =>
    new TextDecoder('utf-8', { fatal: true }).decode(
      new Uint8Array(state.wasm!.memory.buffer, ptr >>> 0, len),
    );
  const host: Record<string, (ptr: number, len: number) => unknown> = {};
  for (const { module: from, name } of WebAssemblyApi.Module.imports(module)) {
    if (from === '__wbindgen_placeholder__' && name.startsWith('__wbg_set_message_')) {
      host[name] = () => undefined; // panic text for Prisma's CLI registry; the thrown error has it too
    } else if (from === '__wbindgen_placeholder__' && name.startsWith('__wbg_Error_')) {
      host[name] = (ptr, len) => new Error(text(ptr, len));
    } else if (from === '__wbindgen_placeholder__' && name.startsWith('__wbg___wbindgen_throw_')) {
      host[name] = (ptr, len) => {
        throw new Error(text(ptr, len));
      };
    } else if (from === '__wbindgen_placeholder__' && name === '__wbindgen_init_externref_table') {
      host[name] = () => {
        const table = state.wasm!.__wbindgen_externrefs;
        const base = table.grow(4);
        table.set(0, undefined);
        [undefined, null, true, false].forEach((value, i) => table.set(base + i, value));
      };
    } else {
      throw new Error(`unsupported prisma-schema wasm import ${from}.${name}: update prisma/schema-wasm.ts`);
    }
  }
  const instance = await WebAssemblyApi.instantiate(module, { __wbindgen_placeholder__: host });
  state.wasm = instance.exports as SchemaWasm;
  state.wasm.__wbindgen_start();
  return state.wasm;
}

/**
 * The schema files at `schemaPath` as `[path, text]` pairs, the way `prisma generate` reads them
 * (@prisma/schema-files-loader): a file is read as is; a folder yields every `*.prisma` file under it,
 * subfolders and symlinks included, so that a job's models in a file of their own are never left
 * out. Sorted by path, so that messages and DMMF order do not depend on the file system. Read-only.
 * Throws when the path cannot be read, and when a folder holds no `*.prisma` file.
 */
export async function readSchemaFiles(schemaPath: string): Promise<[string, string][]> {
  const files: string[] = [];
  const seen = new Set<string>();
  const walk = async (dir: string): Promise<void> => {
    if (seen.has(dir)) return; // a symlink back up the tree
    seen.add(dir);
    for (const name of (await readdir(dir)).sort()) {
      const entry = path.join(dir, name);
      const info = await stat(entry); // follows symlinks, as Prisma does
      if (info.isDirectory()) await walk(entry);
      else if (info.isFile() && path.extname(name) === '.prisma') files.push(entry);
    }
  };
  if ((await stat(schemaPath)).isDirectory()) {
    await walk(schemaPath);
    if (files.length === 0) throw new Error(`${schemaPath} holds no *.prisma file`);
  } else files.push(schemaPath);
  files.sort();
  return Promise.all(
    files.map(async (file): Promise<[string, string]> => [file, await readFile(file, 'utf8')]),
  );
}

/**
 * Parses and validates the schema at `schemaPath` (a `.prisma` file, or a folder of them read by
 * {@link readSchemaFiles}, all validated together as Prisma does) and returns its DMMF datamodel.
 * Read-only; the wasm module is compiled once per process and reused. Throws an Error naming the
 * path and carrying Prisma's validation message (which names the file at fault) when the schema
 * does not validate, and when a file cannot be read or the installed Prisma's wasm has an unknown ABI.
 */
export async function getDmmf(schemaPath: string): Promise<Dmmf> {
  const w = await (schemaWasm ??= loadSchemaWasm());
  const input = new TextEncoder().encode(
    JSON.stringify({ prismaSchema: await readSchemaFiles(schemaPath), noColor: true }),
  );
  const ptr = w.__wbindgen_malloc(input.length, 1) >>> 0;
  new Uint8Array(w.memory.buffer).set(input, ptr);
  const [outPtr, outLen, errorIndex, failed] = w.get_dmmf(ptr, input.length);
  if (failed) {
    const error = w.__wbindgen_externrefs.get(errorIndex);
    w.__externref_table_dealloc(errorIndex);
    const detail = validationMessage(error instanceof Error ? error.message : String(error));
    throw new Error(`${schemaPath} does not validate: ${detail}`, { cause: error });
  }
  const json = new TextDecoder().decode(new Uint8Array(w.memory.buffer, outPtr >>> 0, outLen));
  w.__wbindgen_free(outPtr, outLen, 1);
  return (JSON.parse(json) as { datamodel: Dmmf }).datamodel;
}

/** Prisma reports validation errors as JSON `{ error_code, message }`; show the message. */
function validationMessage(raw: string): string {
  try {
    const parsed = JSON.parse(raw) as { message?: unknown };
    return typeof parsed.message === 'string' ? parsed.message : raw;
  } catch {
    return raw;
  }
}
