import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget, type IPodDisruptionBudget } from 'kubernetes-models/policy/v1';
import {
  ConfigMap,
  PersistentVolumeClaim,
  Secret,
  Service,
  type IConfigMap,
  type IPersistentVolumeClaim,
  type IService,
} from 'kubernetes-models/v1';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBaton } from '../helpers/baton-bin.js';
import { REPO_ROOT } from '../helpers/child.js';

/**
 * deploy/kubernetes rendered as `kubectl kustomize` renders it (Debian package `kubectl`; .ci/run
 * installs it), every object checked against the Kubernetes schemas of kubernetes-models, and the
 * invariants the README promises asserted on what would be applied.
 */
const dir = path.join(REPO_ROOT, 'deploy/kubernetes');
const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
const haveKubectl = kubectl.status === 0;
if (!haveKubectl) {
  if (process.env.CI === 'true') throw new Error('kubectl is missing: .ci/run installs it (apt-get install kubectl)');
  console.warn('[kubernetes] kubectl not found: skipping the Kustomize renders (apt-get install kubectl)');
}

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string } } & Record<string, unknown>;
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'v1/Secret': Secret,
};

function render(overlay: string): K8sObject[] {
  const result = spawnSync('kubectl', ['kustomize', path.join(dir, 'overlays', overlay)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`kubectl kustomize overlays/${overlay} failed:\n${result.stderr}`);
  return YAML.parseAllDocuments(result.stdout).map((d) => d.toJS() as K8sObject);
}

/** Validates against the schema of its kind; unknown kinds fail too. Returns the object typed. */
function validated<T>(object: K8sObject): T {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  new Model(object as never).validate();
  return object as unknown as T;
}

const one = <T>(objects: K8sObject[], kind: string): T => {
  const found = objects.filter((o) => o.kind === kind);
  expect(
    found.map((o) => o.metadata.name),
    kind,
  ).toHaveLength(1);
  return found[0] as unknown as T;
};
const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
  Object.keys(selector ?? {}).length > 0 && Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);

describe.skipIf(!haveKubectl).each(['sqlite', 'postgres'])('the %s overlay', (overlay) => {
  let objects: K8sObject[];
  let deployment: IDeployment;
  beforeAll(() => {
    objects = render(overlay);
    deployment = one<IDeployment>(objects, 'Deployment');
  });
  const pod = () => deployment.spec?.template.spec;
  const container = () => pod()?.containers.find((c) => c.name === 'baton');

  it('renders only objects that pass the Kubernetes schemas, and no Secret', () => {
    for (const object of objects) expect(() => validated(object), `${object.kind} ${object.metadata.name}`).not.toThrow();
    expect(objects.map((o) => o.kind).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service', ...(overlay === 'sqlite' ? ['PersistentVolumeClaim'] : [])].sort(),
    );
  });

  it('probes readiness on /ready/ingress (storing webhooks) and liveness on /health', () => {
    expect(container()?.readinessProbe?.httpGet).toMatchObject({ path: '/ready/ingress', port: 'http' });
    expect(container()?.livenessProbe?.httpGet).toMatchObject({ path: '/health', port: 'http' });
    expect(container()?.ports).toEqual([{ name: 'http', containerPort: 3000 }]);
  });

  it('runs non-root on a read-only root filesystem, writing only to mounted volumes', () => {
    expect(pod()?.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: expect.any(Number) });
    expect(pod()?.securityContext?.runAsUser).not.toBe(0);
    expect(pod()?.automountServiceAccountToken).toBe(false);
    expect(container()?.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    const mounts = new Map((container()?.volumeMounts ?? []).map((m) => [m.mountPath, m]));
    const env = new Map((container()?.env ?? []).map((e) => [e.name, e]));
    // baton writes to its data directory and to /tmp; both must be writable volumes.
    expect(env.get('BATON_DATA_DIR')?.value).toBe('/data');
    for (const writable of ['/data', '/tmp']) expect(mounts.get(writable)?.readOnly, writable).not.toBe(true);
    const volumes = new Set(pod()?.volumes?.map((v) => v.name));
    for (const mount of mounts.values()) expect(volumes.has(mount.name), mount.name).toBe(true);
  });

  it('reads baton.yaml from the ConfigMap, and secrets only by reference', () => {
    const config = one<IConfigMap>(objects, 'ConfigMap');
    expect(Object.keys(config.data ?? {})).toEqual(['baton.yaml']);
    const configVolume = pod()?.volumes?.find((v) => v.configMap?.name === config.metadata?.name);
    const mount = container()?.volumeMounts?.find((m) => m.name === configVolume?.name);
    const env = new Map((container()?.env ?? []).map((e) => [e.name, e]));
    expect(env.get('BATON_CONFIG')?.value).toBe(`${mount?.mountPath}/baton.yaml`);
    expect(container()?.envFrom).toEqual([{ secretRef: { name: 'baton' } }]);
    for (const e of container()?.env ?? []) {
      if (/TOKEN|SECRET|PASSWORD/.test(e.name)) expect(e.value, e.name).toBeUndefined();
    }
  });

  it('routes the Service and the PodDisruptionBudget to baton’s pods', () => {
    const labels = deployment.spec?.template.metadata?.labels;
    expect(matches(deployment.spec?.selector.matchLabels, labels)).toBe(true);
    const service = one<IService>(objects, 'Service');
    expect(matches(service.spec?.selector, labels)).toBe(true);
    expect(service.spec?.ports?.[0]?.targetPort).toBe('http');
    const budget = one<IPodDisruptionBudget>(objects, 'PodDisruptionBudget');
    expect(matches(budget.spec?.selector?.matchLabels, labels)).toBe(true);
    expect(budget.spec?.maxUnavailable).toBe(1);
  });

  if (overlay === 'sqlite') {
    it('runs one replica on a PersistentVolumeClaim, the old pod stopped before the new one starts', () => {
      expect(deployment.spec?.replicas).toBe(1);
      expect(deployment.spec?.strategy).toEqual({ type: 'Recreate' });
      const data = pod()?.volumes?.find((v) => v.name === 'data');
      expect(data?.emptyDir).toBeUndefined();
      const claim = one<IPersistentVolumeClaim>(objects, 'PersistentVolumeClaim');
      expect(data?.persistentVolumeClaim?.claimName).toBe(claim.metadata?.name);
      const url = container()?.env?.find((e) => e.name === 'DATABASE_URL')?.value;
      expect(url).toMatch(/^sqlite:\/data\//);
    });
  } else {
    it('runs several replicas with DATABASE_URL from a Secret, replaced one at a time', () => {
      expect(deployment.spec?.replicas).toBeGreaterThanOrEqual(2);
      expect(deployment.spec?.strategy).toMatchObject({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0 } });
      const url = container()?.env?.find((e) => e.name === 'DATABASE_URL');
      expect(url?.value).toBeUndefined();
      expect(url?.valueFrom?.secretKeyRef).toEqual({ name: 'baton-database', key: 'url' });
      expect(pod()?.volumes?.find((v) => v.name === 'data')?.persistentVolumeClaim).toBeUndefined();
    });

    it('requires the bootstrap token: the pods share no disk where a minted first token could be found', () => {
      const token = container()?.env?.find((e) => e.name === 'BATON_BOOTSTRAP_TOKEN');
      expect(token?.value).toBeUndefined();
      expect(token?.valueFrom?.secretKeyRef).toEqual({ name: 'baton', key: 'BATON_BOOTSTRAP_TOKEN', optional: false });
    });
  }
});

describe.skipIf(!haveKubectl)('the shared-spool component, with the PostgreSQL overlay', () => {
  let objects: K8sObject[];
  let work: string;
  beforeAll(() => {
    // A kustomization of a user's own, as the component's comment says to write it.
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-k8s-spool-'));
    const from = path.relative(work, dir);
    fs.writeFileSync(
      path.join(work, 'kustomization.yaml'),
      YAML.stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: [`${from}/overlays/postgres`],
        components: [`${from}/components/shared-spool`],
      }),
    );
    const result = spawnSync('kubectl', ['kustomize', work], { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`kubectl kustomize with components/shared-spool failed:\n${result.stderr}`);
    objects = YAML.parseAllDocuments(result.stdout).map((d) => d.toJS() as K8sObject);
  });
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  it('puts every replica’s spool on one ReadWriteMany claim, the rest of /data still the pod’s own', () => {
    for (const object of objects) expect(() => validated(object), `${object.kind} ${object.metadata.name}`).not.toThrow();
    const claim = one<IPersistentVolumeClaim>(objects, 'PersistentVolumeClaim');
    expect(claim.spec?.accessModes).toEqual(['ReadWriteMany']);
    const deployment = one<IDeployment>(objects, 'Deployment');
    expect(deployment.spec?.replicas).toBeGreaterThanOrEqual(2);
    const pod = deployment.spec?.template.spec;
    const container = pod?.containers.find((c) => c.name === 'baton');
    const mount = container?.volumeMounts?.find((m) => m.name === 'spool');
    expect(mount?.readOnly).not.toBe(true);
    expect(container?.env?.find((e) => e.name === 'WEBHOOK_SPOOL_DIR')?.value).toBe(mount?.mountPath);
    expect(pod?.volumes?.find((v) => v.name === 'spool')?.persistentVolumeClaim?.claimName).toBe(claim.metadata?.name);
    expect(pod?.volumes?.find((v) => v.name === 'data')?.emptyDir).toBeDefined();
  });
});

describe('secret.example.yaml', () => {
  const examples = YAML.parseAllDocuments(fs.readFileSync(path.join(dir, 'secret.example.yaml'), 'utf8')).map((d) => d.toJS() as K8sObject);
  const byName = new Map(examples.map((s) => [s.metadata.name, s as K8sObject & { stringData: Record<string, string> }]));

  it('says what baton does with the bootstrap token: 32+ characters, the first-admin-token file without it', () => {
    const text = fs.readFileSync(path.join(dir, 'secret.example.yaml'), 'utf8');
    expect(text).toContain('32+ characters');
    expect(text).toContain('first-admin-token');
    expect(text).not.toMatch(/printed in the log/);
    expect(byName.get('baton')?.stringData.BATON_BOOTSTRAP_TOKEN).toMatch(/replace-with/);
  });

  it('holds the Secrets the manifests reference, with placeholders, and is part of no kustomization', () => {
    for (const example of examples) expect(() => validated(example)).not.toThrow();
    expect([...byName.keys()].sort()).toEqual(['baton', 'baton-database']);
    expect(Object.keys(byName.get('baton-database')?.stringData ?? {})).toEqual(['url']);
    for (const value of [...byName.values()].flatMap((s) => Object.values(s.stringData))) {
      expect(value).toMatch(/replace-with/);
    }
    for (const file of ['base/kustomization.yaml', 'overlays/sqlite/kustomization.yaml', 'overlays/postgres/kustomization.yaml']) {
      const kustomization = YAML.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { resources: string[] };
      expect(kustomization.resources.filter((r) => r.includes('secret'))).toEqual([]);
    }
  });

  describe('with the ConfigMap’s baton.yaml', () => {
    let work: string;
    beforeAll(() => {
      work = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-k8s-config-'));
    });
    afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

    it('is a configuration `baton config check` accepts', async () => {
      const file = path.join(work, 'baton.yaml');
      fs.copyFileSync(path.join(dir, 'base/baton.yaml'), file);
      const env = {
        ...byName.get('baton')?.stringData,
        DATABASE_URL: byName.get('baton-database')?.stringData.url ?? '',
        BATON_CONFIG: file,
        BATON_DATA_DIR: path.join(work, 'data'),
      };
      const result = await runBaton(['config', 'check'], { env, cwd: work });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('coder');
    });
  });
});
