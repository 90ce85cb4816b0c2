// deploy/kubernetes against the server itself: every kustomization renders with `kubectl
// kustomize`, every object validates against the Kubernetes / Gateway API schemas (kubernetes-
// models), and the probe paths, ports, metric names and label selectors in them are the ones a
// running Conveyor serves, read from its own declarations (option parser, routes, metric table).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerOptions } from '../../src/config/server-options.js';
import { allMetricNames } from '../../src/metrics/metric-definitions.js';
import { type K8sObject, kubectlPath, kustomizations, modelClass, render } from '../support/kustomize.js';
import { makeRepository, startTestServer, type TestServer } from '../support/server.js';

const KUBECTL = kubectlPath();
// CRDs the kubernetes-models packages do not ship (gateway-api 2.0.0 has no inference.networking.* group).
const UNVALIDATED_KINDS = ['InferencePool', 'ScaledObject', 'ServiceMonitor', 'ServingRuntime', 'InferenceService'];
// Served once the i15-metrics branch (the vLLM metric contract, /metrics on the HTTP port) is merged.
const VLLM_NAME = /vllm:[a-z_]+/g;

interface Container {
  name: string;
  args: string[];
  ports: { name: string; containerPort: number }[];
  startupProbe: Probe;
  readinessProbe: Probe;
  livenessProbe: Probe;
  lifecycle: { preStop: { sleep: { seconds: number } } };
}
interface Probe {
  httpGet: { path: string; port: string | number };
}
interface PodSpec {
  terminationGracePeriodSeconds: number;
  containers: Container[];
}

const rendered = new Map<string, K8sObject[]>();
const all = (): K8sObject[] => [...rendered.values()].flat();
const ofKind = (objects: K8sObject[], kind: string): K8sObject[] => objects.filter((o) => o.kind === kind);
const spec = <T>(object: K8sObject): T => object['spec'] as T;
const conveyorDeployments = (objects: K8sObject[]): K8sObject[] => ofKind(objects, 'Deployment').filter((d) => d.metadata.name === 'conveyor');
const podOf = (deployment: K8sObject): { labels: Record<string, string>; spec: PodSpec } => {
  const template = spec<{ template: { metadata: { labels: Record<string, string> }; spec: PodSpec } }>(deployment).template;
  return { labels: template.metadata.labels, spec: template.spec };
};
const serverArgs = (container: { args: string[] }) => parseServerOptions(container.args.slice(container.args[0] === 'serve' ? 1 : 0));
const subset = (selector: Record<string, string>, labels: Record<string, string>): boolean => Object.entries(selector).every(([k, v]) => labels[k] === v);

let server: TestServer;

describe.skipIf(!KUBECTL)(`deploy/kubernetes${KUBECTL ? '' : ' (skipped: kubectl is not on PATH, so kustomize cannot render)'}`, () => {
  beforeAll(async () => {
    for (const dir of kustomizations()) rendered.set(dir, render(dir));
    server = await startTestServer(await makeRepository([]));
  });
  afterAll(async () => server?.stop());

  it('renders the base, every overlay and every example', () => {
    expect([...rendered.keys()]).toEqual(expect.arrayContaining(['base', 'overlays/cpu-small', 'overlays/keda', 'examples/kserve', 'examples/inference-gateway']));
    for (const objects of rendered.values()) expect(objects.length).toBeGreaterThan(0);
  });

  it('validates every object against its schema; only the known CRDs go unvalidated', async () => {
    const unvalidated = new Set<string>();
    for (const object of all()) {
      const Model = await modelClass(object.apiVersion, object.kind);
      if (!Model) {
        unvalidated.add(object.kind);
        continue;
      }
      expect(() => new Model(object).validate(), `${object.kind}/${object.metadata.name}`).not.toThrow();
    }
    expect([...unvalidated].sort()).toEqual([...UNVALIDATED_KINDS].sort());
  });

  it("names the server's ports, probe routes and drain timeout", () => {
    const routes = new Set(server.httpRoutes.filter((r) => r.method === 'GET').map((r) => r.url));
    for (const deployment of ofKind(all(), 'Deployment').filter((d) => d.metadata.name === 'conveyor')) {
      const pod = podOf(deployment).spec;
      const container = pod.containers.find((c) => c.name === 'conveyor')!;
      const options = serverArgs(container);
      const ports = Object.fromEntries(container.ports.map((p) => [p.name, p.containerPort]));
      expect(ports).toEqual({ http: options.httpPort, grpc: options.grpcPort, metrics: options.metricsPort });
      for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe]) {
        expect(routes).toContain(probe.httpGet.path);
        expect(Object.keys(ports)).toContain(probe.httpGet.port);
      }
      // Probes whose failure restarts the container go where serving traffic cannot crowd them
      // out (the metrics port); readiness checks the serving port itself (its probe reserve).
      expect([container.startupProbe.httpGet.port, container.livenessProbe.httpGet.port]).toEqual(['metrics', 'metrics']);
      expect(container.readinessProbe.httpGet.port).toBe('http');
      expect(container.readinessProbe.httpGet.path).toBe('/v2/health/ready');
      expect(container.livenessProbe.httpGet.path).toBe('/v2/health/live');
      // The pod is killed only after the preStop pause and the whole drain.
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(container.lifecycle.preStop.sleep.seconds + options.exitTimeoutSecs);
      expect(options.metricsEngineType).toBe('vllm');
    }
  });

  it('answers the probes and /metrics where the manifests point', async () => {
    expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(200);
    const base = conveyorDeployments(rendered.get('base')!)[0]!;
    const container = podOf(base).spec.containers.find((c) => c.name === 'conveyor')!;
    const portOf = { http: server.httpPort, metrics: server.metricsPort } as Record<string | number, number>;
    for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe]) {
      expect((await fetch(`http://127.0.0.1:${portOf[probe.httpGet.port]}${probe.httpGet.path}`)).status, `${probe.httpGet.path} on ${probe.httpGet.port}`).toBe(200);
    }
    const monitor = ofKind(rendered.get('base')!, 'ServiceMonitor')[0]!;
    const path = spec<{ endpoints: { path: string }[] }>(monitor).endpoints[0]!.path;
    expect((await fetch(`http://127.0.0.1:${server.metricsPort}${path}`)).status).toBe(200);
    // The endpoint picker scrapes the InferencePool's target port: the HTTP serving port.
    expect((await fetch(`${server.http}${path}`)).status).toBe(200);
  });

  it('reads only metric names the server declares', () => {
    const declared = new Set(allMetricNames('vllm'));
    const used = new Set(JSON.stringify(all()).match(VLLM_NAME) ?? []);
    expect(used).toContain('vllm:num_requests_waiting');
    const undeclared = [...used].filter((name) => !declared.has(name));
    expect(undeclared).toEqual([]);
    // The adapter rule turns the declared series into the pods metric the HPA reads.
    const hpa = ofKind(rendered.get('base')!, 'HorizontalPodAutoscaler')[0]!;
    const hpaMetric = spec<{ metrics: { pods: { metric: { name: string } } }[] }>(hpa).metrics[0]!.pods.metric.name;
    const rules = (ofKind(rendered.get('examples/prometheus-adapter')!, 'ConfigMap')[0]!['data'] as Record<string, string>)['config.yaml']!;
    expect(rules).toContain(`as: ${hpaMetric}`);
    expect(declared.has(/seriesQuery: '([^{]+)/.exec(rules)![1]!)).toBe(true);
  });

  it('selects the Conveyor pods from every Service, ServiceMonitor and InferencePool', () => {
    for (const [dir, objects] of rendered) {
      const deployment = conveyorDeployments(objects)[0];
      if (!deployment) continue;
      const { labels, spec: pod } = podOf(deployment);
      expect(subset(spec<{ selector: { matchLabels: Record<string, string> } }>(deployment).selector.matchLabels, labels), dir).toBe(true);
      const options = serverArgs(pod.containers[0]!);
      for (const service of ofKind(objects, 'Service').filter((s) => s.metadata.name === 'conveyor')) {
        expect(subset(spec<{ selector: Record<string, string> }>(service).selector, labels), dir).toBe(true);
        for (const monitor of ofKind(objects, 'ServiceMonitor')) {
          const { selector, endpoints } = spec<{ selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] }>(monitor);
          expect(subset(selector.matchLabels, service.metadata.labels ?? {}), dir).toBe(true);
          const servicePorts = spec<{ ports: { name: string; port: number }[] }>(service).ports;
          expect(servicePorts.find((p) => p.name === endpoints[0]!.port)?.port).toBe(options.metricsPort);
        }
      }
      for (const pool of ofKind(objects, 'InferencePool')) {
        const { selector, targetPorts } = spec<{ selector: { matchLabels: Record<string, string> }; targetPorts: { number: number }[] }>(pool);
        expect(subset(selector.matchLabels, labels), dir).toBe(true);
        expect(selector.matchLabels).toHaveProperty('inference.networking.k8s.io/engine-type', 'vllm');
        // The picker sends requests to, and scrapes /metrics on, the HTTP serving port.
        expect(targetPorts.map((p) => p.number)).toEqual([options.httpPort]);
      }
    }
  });
});
