/**
 * The deploy files of deploy/ (docs/deploy.md) read the way their tools read them: the Kubernetes
 * documents kustomization.yaml lists, the compose file interpolated as Docker Compose does, and
 * the Dockerfile's instructions.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { PROJECT_ROOT } from '../../runtime/config.ts';

export const DEPLOY = path.join(PROJECT_ROOT, 'deploy');
export const K8S = path.join(DEPLOY, 'k8s');

/** A Kubernetes document with the fields the checks read. */
export interface K8sDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  /** The file it came from, for messages. */
  file: string;
}

/** The files kustomization.yaml lists, each parsed into its documents. */
export function kustomizeResources(): { files: string[]; docs: K8sDoc[] } {
  const kustomization = parse(readFileSync(path.join(K8S, 'kustomization.yaml'), 'utf8')) as {
    resources: string[];
  };
  const docs: K8sDoc[] = [];
  for (const file of kustomization.resources) {
    for (const doc of parseAllDocuments(readFileSync(path.join(K8S, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      const value = doc.toJS() as Omit<K8sDoc, 'file'> | null;
      if (value) docs.push({ ...value, file });
    }
  }
  return { files: kustomization.resources, docs };
}

export interface Container {
  name: string;
  image: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  volumeMounts?: { name: string; mountPath: string }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
}

export interface Probe {
  httpGet?: { path: string; port: string | number };
}

export interface PodSpec {
  terminationGracePeriodSeconds?: number;
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string } }[];
}

/** The pod template of a Deployment or Job: its labels and spec. */
export function podTemplate(doc: K8sDoc): { labels: Record<string, string>; spec: PodSpec } {
  const template = doc.spec?.template as { metadata: { labels: Record<string, string> }; spec: PodSpec };
  return { labels: template.metadata.labels, spec: template.spec };
}

/** The one document of `kind` named `name`. */
export function docOf(docs: K8sDoc[], kind: string, name: string): K8sDoc {
  const found = docs.filter((d) => d.kind === kind && d.metadata.name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${found.length}`);
  return found[0] as K8sDoc;
}

/**
 * Docker Compose's interpolation of one string: `${VAR}`, `${VAR:-default}`, `${VAR-default}`,
 * `${VAR:?error}`, `${VAR?error}`, `$VAR` and `$$` (a literal `$`), with `env` as the environment.
 * @throws when a required variable is missing (as `docker compose` stops).
 */
export function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(
    /\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g,
    (
      _all: string,
      dollar: string,
      braced: string | undefined,
      op: string | undefined,
      arg: string | undefined,
      bare: string | undefined,
    ): string => {
      if (dollar === '$') return '$';
      const name = braced ?? bare ?? '';
      const value = env[name];
      const unset = op?.startsWith(':') ? !value : value === undefined;
      if (!unset) return value ?? '';
      if (op?.endsWith('?')) throw new Error(`required variable ${name} is missing: ${arg}`);
      return op ? (arg ?? '') : '';
    },
  );
}

/** Interpolates every string of a parsed compose file (keys are not interpolated, as in Compose). */
function interpolateAll(value: unknown, env: Record<string, string>): unknown {
  if (typeof value === 'string') return interpolate(value, env);
  if (Array.isArray(value)) return value.map((v) => interpolateAll(v, env));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, env)]));
  }
  return value;
}

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  deploy?: { replicas?: number | string };
  stop_grace_period?: string;
  healthcheck?: { test: string[] };
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
}

/**
 * deploy/compose.yaml as Compose loads it: YAML merge keys resolved, every string interpolated
 * with `env`, then the one interpolated field the file uses whose type is not a string cast
 * (`deploy.replicas`, an integer: compose-go casts it before validating the same way).
 */
export function loadCompose(env: Record<string, string>): ComposeFile {
  const raw = parse(readFileSync(path.join(DEPLOY, 'compose.yaml'), 'utf8'), { merge: true }) as unknown;
  const file = interpolateAll(raw, env) as ComposeFile;
  for (const service of Object.values(file.services)) {
    const replicas = service.deploy?.replicas;
    if (typeof replicas === 'string' && /^\d+$/.test(replicas))
      service.deploy = { replicas: Number(replicas) };
  }
  return file;
}

/** One Dockerfile instruction: its keyword (upper case) and its arguments as written. */
export interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions (continuation lines joined, comments and parser directives left out). */
export function dockerfileInstructions(text: string): Instruction[] {
  const logical: string[] = [];
  let current = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line)) continue;
    const continued = /\\\s*$/.test(line);
    current += `${line.replace(/\\\s*$/, '')} `;
    if (continued) continue;
    if (current.trim()) logical.push(current.trim());
    current = '';
  }
  if (current.trim()) logical.push(current.trim());
  return logical.map((l) => {
    const [keyword = '', ...rest] = l.split(/\s+/);
    return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
  });
}

/** The instructions of each stage (from its FROM to the next), in order. */
export function dockerfileStages(text: string): Instruction[][] {
  const stages: Instruction[][] = [];
  for (const instruction of dockerfileInstructions(text)) {
    if (instruction.keyword === 'FROM') stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
}
