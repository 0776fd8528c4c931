import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runnerEnv, type CoderProvider, type WorkspaceSpec } from '../../src/workspaces/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { until } from '../helpers/until.js';
import { fastProvider, specFor } from './coder-support.js';

/**
 * The Coder templates in deploy/coder/ (Docker: main.tf, Kubernetes: kubernetes/main.tf) against
 * what baton's Coder provider sends, parsed with HashiCorp's own HCL parser (@cdktf/hcl2json):
 * every parameter without a default is sent and nothing undeclared is; `coder templates push`
 * can import them; the runner in the workspace gets the run as a local runner does; both
 * flavours share one definition of the run; and the startup and status scripts, run for real
 * with sh, do what the workspace page promises.
 */
// Loaded untyped on purpose: its .d.ts pulls the DOM lib into the whole program's globals.
const { parse } = createRequire(import.meta.url)('@cdktf/hcl2json') as { parse(file: string, text: string): Promise<unknown> };

const deployDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../deploy/coder');
const FLAVOURS = { docker: path.join(deployDir, 'main.tf'), kubernetes: path.join(deployDir, 'kubernetes/main.tf') } as const;
type Flavour = keyof typeof FLAVOURS;

// Terraform JSON of the parts read here; hcl2json wraps every block in a list.
interface ParameterBlock {
  name: string;
  type?: string;
  default?: string;
  validation?: { regex?: string; error?: string }[];
}
interface AgentBlock {
  env: Record<string, string>;
  startup_script: string;
  metadata: { key: string; script: string }[];
}
type Blocks = Record<string, Record<string, unknown[]>>;
interface Template {
  data: { coder_parameter: Record<string, ParameterBlock[]> } & Blocks;
  resource: { coder_agent: { main: AgentBlock[] }; coder_metadata?: Record<string, { resource_id: string }[]> } & Blocks;
  variable: Record<string, { default?: unknown }[]>;
  locals: Record<string, unknown>[];
  [kind: string]: unknown;
}

const templates = {} as Record<Flavour, Template>;
beforeAll(async () => {
  for (const [flavour, file] of Object.entries(FLAVOURS)) {
    templates[flavour as Flavour] = (await parse(file, fs.readFileSync(file, 'utf8'))) as Template;
  }
});

const parameters = (t: Template) => Object.values(t.data.coder_parameter).map((blocks) => blocks[0] as ParameterBlock);
const agent = (t: Template) => t.resource.coder_agent.main[0] as AgentBlock;

/**
 * What terraform-provider-coder does on template import (provider/parameter.go, `Parameter.Valid`):
 * with no value given, a parameter's validation regex is checked against its default, or the
 * empty string when it has none. JavaScript's RegExp stands in for Go's RE2 on these patterns.
 */
function importProblems(parameter: ParameterBlock): string[] {
  return (parameter.validation ?? [])
    .filter((v) => v.regex !== undefined && !new RegExp(v.regex).test(parameter.default ?? ''))
    .map((v) => `${parameter.name}: the value ${JSON.stringify(parameter.default ?? '')} does not match ${v.regex}`);
}

/** Renders a Terraform template string: `$${` is a literal `${`, `${expr}` is looked up. */
function render(template: string, values: Record<string, string>): string {
  return template.replace(/\$\$\{|\$\{([^}]+)\}/g, (match, expr: string | undefined) => {
    if (expr === undefined) return '${';
    const value = values[expr.trim()];
    if (value === undefined) throw new Error(`the test does not know the value of \${${expr}}; add it`);
    return value;
  });
}

let coder: FakeCoder;
let provider: CoderProvider;
beforeEach(async () => {
  coder = await createFakeCoder({ stepMs: 2 });
  provider = fastProvider(coder);
});
afterEach(async () => {
  await provider.close?.();
  await coder.close();
});

async function sentFor(spec: WorkspaceSpec): Promise<Record<string, string>> {
  await provider.create(spec);
  return coder.workspace(spec.name)?.richParameters ?? {};
}

describe.each(Object.keys(FLAVOURS) as Flavour[])('the %s template against what baton sends', (flavour) => {
  it('declares the run’s parameters', () => {
    const names = parameters(templates[flavour]).map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['callback_token', 'max_duration_ms', 'token_cap', 'stage_build']));
    expect(parameters(templates[flavour]).filter((p) => p.default === undefined).length).toBeGreaterThan(3);
  });

  it.each([
    ['an issue stage', specFor('bt-issue', { tokenCap: 200_000, build: 'heavy' })],
    [
      'a repository-wide stage without a token cap',
      specFor('bt-maint', { stage: 'maintenance', number: undefined, deployEnv: undefined, forgeUrl: undefined }),
    ],
    ['a manual run with arguments and a branch', specFor('bt-manual', { arguments: 'only the parser, please', ref: 'feature/parser' })],
  ])('gets every required parameter and nothing undeclared for %s', async (_label, spec) => {
    const sent = await sentFor(spec);
    const declared = parameters(templates[flavour]);
    for (const p of declared) {
      if (p.default === undefined) expect(sent, `required parameter ${p.name}`).toHaveProperty(p.name);
      for (const v of p.validation ?? []) if (v.regex && sent[p.name] !== undefined) expect(sent[p.name]).toMatch(new RegExp(v.regex));
    }
    const names = new Set(declared.map((p) => p.name));
    expect(Object.keys(sent).filter((name) => !names.has(name))).toEqual([]);
  });

  it('imports with `coder templates push`: no validation fails on the value the import plans with', () => {
    expect(parameters(templates[flavour]).flatMap(importProblems)).toEqual([]);
    // The check catches the form that broke pushes: a URL regex on a parameter without default.
    expect(importProblems({ name: 'callback_url', validation: [{ regex: '^https?://' }] })).toHaveLength(1);
  });

  it('hands the runner the run as the local provider does, the token cap and duration limit included', async () => {
    const spec = specFor('bt-env', {
      tokenCap: 250_000,
      build: 'light',
      maxDurationMs: 45 * 60_000,
      arguments: 'explain $HOME; then stop',
      ref: 'release/2.0',
    });
    const sent = await sentFor(spec);
    const declared = new Map(parameters(templates[flavour]).map((p) => [p.name, p]));
    // What the workspace's agent environment becomes once Coder fills in the parameters.
    const env: Record<string, string> = {};
    for (const [key, expression] of Object.entries(agent(templates[flavour]).env)) {
      const parameter = /^\$\{data\.coder_parameter\.([a-z0-9_]+)\.value\}$/.exec(expression)?.[1];
      if (parameter) env[key] = sent[parameter] ?? declared.get(parameter)?.default ?? '';
    }
    expect(env).toMatchObject(runnerEnv(spec));
    expect(env).toMatchObject({ BATON_TOKEN_CAP: '250000', BATON_MAX_DURATION_MS: String(45 * 60_000), BATON_STAGE_BUILD: 'light' });
    expect(env).toMatchObject({ BATON_ARGUMENTS: 'explain $HOME; then stop', BATON_BRANCH: 'release/2.0' });
  });

  it('shows which run the workspace is on its pod or container', () => {
    const metadata = templates[flavour].resource.coder_metadata?.run?.[0];
    expect(metadata?.resource_id).toBe(
      flavour === 'docker' ? '${docker_container.workspace[0].id}' : '${kubernetes_pod_v1.workspace[0].id}',
    );
  });
});

describe('the two flavours', () => {
  it('share one definition of the run: parameters, agent, apps and the variables both have', () => {
    const { docker, kubernetes } = templates;
    expect(kubernetes.data).toEqual(docker.data);
    expect(kubernetes.locals).toEqual(docker.locals);
    for (const kind of ['coder_agent', 'coder_app', 'coder_metadata']) {
      const [a, b] = [docker.resource[kind] ?? {}, kubernetes.resource[kind] ?? {}];
      expect(Object.keys(b), kind).toEqual(Object.keys(a));
      if (kind !== 'coder_metadata') expect(b, kind).toEqual(a);
    }
    for (const name of Object.keys(docker.variable).filter((n) => n in kubernetes.variable)) {
      expect(kubernetes.variable[name], `variable ${name}`).toEqual(docker.variable[name]);
    }
  });

  it('keeps the Kubernetes pod one run, non-root, without cluster credentials, its home an emptyDir', () => {
    const pod = (templates.kubernetes.resource.kubernetes_pod_v1?.workspace?.[0] ?? {}) as {
      spec: {
        restart_policy: string;
        automount_service_account_token: boolean;
        security_context: { run_as_non_root: boolean; run_as_user: number }[];
        container: { volume_mount: { name: string; mount_path: string }[]; security_context: { allow_privilege_escalation: boolean }[] }[];
        volume: { name: string; empty_dir?: unknown[] }[];
      }[];
    };
    const spec = pod.spec[0];
    expect(spec).toMatchObject({ restart_policy: 'Never', automount_service_account_token: false });
    expect(spec?.security_context[0]).toMatchObject({ run_as_non_root: true, run_as_user: 1000 });
    expect(spec?.container[0]?.security_context[0]?.allow_privilege_escalation).toBe(false);
    const home = spec?.container[0]?.volume_mount.find((m) => m.mount_path === '/home/coder');
    expect(spec?.volume.find((v) => v.name === home?.name)?.empty_dir).toBeDefined();
  });
});

describe('the workspace scripts, run with sh', () => {
  let dir: string;
  let workdir: string;
  let bin: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-template-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    workdir = fs.mkdtempSync(path.join(dir, 'work-'));
    bin = fs.mkdtempSync(path.join(dir, 'bin-'));
    // Stand-ins that record how they were called: `timeout` runs the rest of its argv as the real
    // one would, and `baton agent` writes two log lines and exits with $FAKE_EXIT.
    fs.writeFileSync(path.join(bin, 'timeout'), '#!/bin/sh\necho "$@" > "$BATON_WORKDIR/timeout.args"\nshift 2\nexec "$@"\n', {
      mode: 0o755,
    });
    fs.writeFileSync(
      path.join(bin, 'baton'),
      '#!/bin/sh\nprintf "one\\ntwo\\n" > "$BATON_WORKDIR/.baton/agent.log"\nexit "${FAKE_EXIT:-0}"\n',
      { mode: 0o755 },
    );
  });

  const values = () => ({
    'local.workdir': workdir,
    'local.log_port': '13338',
    'var.baton_npm_spec': 'baton',
    'var.max_run_hours': '3',
    'data.coder_parameter.run_id.value': '7',
    'data.coder_parameter.task_type.value': 'develop',
  });
  const sh = (script: string, env: Record<string, string> = {}) => {
    const result = spawnSync('sh', ['-c', script], {
      encoding: 'utf8',
      env: { PATH: `${bin}:${process.env.PATH}`, HOME: dir, BATON_WORKDIR: workdir, ...env },
    });
    return { code: result.status, out: result.stdout.trim(), err: result.stderr };
  };
  const status = () => sh(render(agent(templates.docker).metadata.find((m) => m.key === 'run')?.script ?? '', values())).out;
  const startup = (env: Record<string, string> = {}) => sh(render(agent(templates.docker).startup_script, values()), env);
  const exitFile = () => path.join(workdir, '.baton/runner.exit');

  it('reports starting, then running with the log line count, then complete', () => {
    expect(status()).toBe('starting');
    fs.mkdirSync(path.join(workdir, '.baton'));
    fs.writeFileSync(path.join(workdir, '.baton/runner.out'), '');
    fs.writeFileSync(path.join(workdir, '.baton/agent.log'), 'a\nb\nc\n');
    expect(status()).toBe('running, 3 log lines');
    fs.writeFileSync(exitFile(), '0\n');
    expect(status()).toBe('complete, 3 log lines');
    fs.writeFileSync(exitFile(), '1\n');
    expect(status()).toBe('failed (exit 1), 3 log lines');
  });

  it('starts `baton agent` once, under a backstop of the run’s limit plus 15 minutes, and records its exit code', async () => {
    const first = startup({ BATON_MAX_DURATION_MS: String(5 * 3_600_000), FAKE_EXIT: '0' });
    expect(first).toMatchObject({ code: 0, out: expect.stringContaining('baton agent started for run 7 (develop)') });
    await until(() => fs.existsSync(exitFile()) && fs.readFileSync(exitFile(), 'utf8').trim() !== '', 'the runner to exit');
    expect(fs.readFileSync(path.join(workdir, 'timeout.args'), 'utf8').trim()).toBe(`--kill-after=60s ${5 * 3600 + 900}s baton agent`);
    expect(status()).toBe('complete, 2 log lines');
    // A second start (the agent reconnecting, a restarted container) never runs the stage again.
    fs.rmSync(path.join(workdir, 'timeout.args'));
    expect(startup().out).toMatch(/already ran in this workspace/);
    expect(fs.existsSync(path.join(workdir, 'timeout.args'))).toBe(false);
  });

  it('keeps max_run_hours as the floor of the backstop and reports a failed run', async () => {
    startup({ BATON_MAX_DURATION_MS: '60000', FAKE_EXIT: '1' });
    await until(() => fs.existsSync(exitFile()) && fs.readFileSync(exitFile(), 'utf8').trim() !== '', 'the runner to exit');
    expect(fs.readFileSync(path.join(workdir, 'timeout.args'), 'utf8').trim()).toBe('--kill-after=60s 10800s baton agent');
    expect(status()).toBe('failed (exit 1), 2 log lines');
  });
});
