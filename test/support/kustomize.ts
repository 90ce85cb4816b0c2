// deploy/kubernetes rendered by the real `kubectl kustomize`, and each object validated offline by
// the kubernetes-models packages. kubectl also turns the YAML into JSON without a cluster
// (`annotate --local -o json`), so the test needs no YAML parser.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> };
  readonly [field: string]: unknown;
}

export const KUSTOMIZE_ROOT = 'deploy/kubernetes';
const MARK = 'conveyor.test/rendered';

/** The path of kubectl on PATH, or undefined. */
export function kubectlPath(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Every folder under deploy/kubernetes with a kustomization.yaml (base, overlays, examples). */
export function kustomizations(root = KUSTOMIZE_ROOT): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    const entries = readdirSync(dir, { withFileTypes: true });
    if (entries.some((e) => e.name === 'kustomization.yaml')) found.push(relative(root, dir) || '.');
    for (const e of entries) if (e.isDirectory()) walk(join(dir, e.name));
  };
  walk(root);
  return found.sort();
}

export function render(dir: string): K8sObject[] {
  const yaml = execFileSync('kubectl', ['kustomize', join(KUSTOMIZE_ROOT, dir)], { encoding: 'utf8' });
  const json = execFileSync('kubectl', ['annotate', '--local', '-f', '-', '-o', 'json', `${MARK}=1`], { input: yaml, encoding: 'utf8' });
  // kubectl prints one pretty-printed object after another; only top-level braces sit at column 0.
  const objects = JSON.parse(`[${json.trim().replace(/\n}\n{/g, '\n},\n{')}]`) as K8sObject[];
  return objects.map(unmark);
}

function unmark(object: K8sObject): K8sObject {
  const annotations = { ...object.metadata.annotations };
  delete annotations[MARK];
  const metadata = { ...object.metadata, annotations };
  if (Object.keys(annotations).length === 0) delete (metadata as { annotations?: unknown }).annotations;
  return { ...object, metadata };
}

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: object) => Validatable;

/** The model class the packages ship for this apiVersion and kind, or undefined (a CRD they do not know). */
export async function modelClass(apiVersion: string, kind: string): Promise<ModelClass | undefined> {
  const gateway = apiVersion.startsWith('gateway.networking.');
  const specifier = gateway ? `@kubernetes-models/gateway-api/${apiVersion}` : `kubernetes-models/${apiVersion}`;
  let module: Record<string, unknown>;
  try {
    module = await import(specifier);
  } catch {
    return undefined;
  }
  const found = module[kind];
  return typeof found === 'function' ? (found as ModelClass) : undefined;
}
