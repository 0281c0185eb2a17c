/**
 * Unknown fields in Kubernetes documents, found the way `kubectl apply --validate=strict` finds them:
 * the kubernetes-models schemas accept any extra property (Kubernetes' OpenAPI leaves
 * additionalProperties open), so a misspelt `readinesProbe` would pass their `validate()`. Their
 * TypeScript declarations list every field, though: each document is type-checked as an object
 * literal of its model's interface, and TypeScript reports every property the interface lacks.
 */
import path from 'node:path';
import ts from 'typescript';
import { PROJECT_ROOT } from '../../runtime/config.ts';

/** A document to check, and the module of its model (e.g. `kubernetes-models/apps/v1`). */
export interface TypedDoc {
  module: string;
  kind: string;
  data: unknown;
  /** Says where the document came from, in messages. */
  label: string;
}

/**
 * The type errors of `docs` as `<label>: <message>` lines (none when every field is known and
 * typed right). Takes a few seconds: one TypeScript program for all of them.
 */
export function unknownFields(docs: readonly TypedDoc[]): string[] {
  const file = path.join(PROJECT_ROOT, 'test', '__k8s-strict-fields__.ts');
  const lines = docs.flatMap((d, i) => [
    `import type { I${d.kind} as T${i} } from '${d.module}/${d.kind}';`,
    `export const doc${i}: T${i} = ${JSON.stringify(d.data)};`,
  ]);
  const text = lines.join('\n');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    name === file ? ts.createSourceFile(name, text, version) : getSourceFile(name, version, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file);
  return ts.getPreEmitDiagnostics(program, source).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    const doc = docs[Math.floor(line / 2)];
    return `${doc?.label ?? '?'}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}
