import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readRunnerSecrets, RUNNER_SECRETS, type RunnerSecrets } from '../../src/runner-contract/index.js';
import { runnerEnv, runnerSecrets, type CoderProvider, type WorkspaceSpec } from '../../src/workspaces/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { until } from '../helpers/until.js';
import { fastProvider, specFor } from './coder-support.js';

/**
 * The Coder templates in deploy/coder/ (Docker: main.tf, Kubernetes: kubernetes/main.tf) against
 * what baton's Coder provider sends, parsed with HashiCorp's own HCL parser (@cdktf/hcl2json):
 * every parameter without a default is sent and nothing undeclared is; `coder templates push`
 * can import them; the runner in the workspace gets the run as a local runner does, its secrets
 * in a 0600 file and never in its environment; both flavours share one definition of the run;
 * and the startup and status scripts, run for real with sh, do what the workspace page promises.
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

const FLAVOUR_NAMES = Object.keys(FLAVOURS) as Flavour[];
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

/** The agents' npm specs deploy/coder/Dockerfile installs, by CLI name (its ARGs). */
const DOCKERFILE_AGENTS: Record<string, string> = (() => {
  const dockerfile = fs.readFileSync(path.join(deployDir, 'Dockerfile'), 'utf8');
  const claude = /ARG CLAUDE_CODE_VERSION=(\S+)/.exec(dockerfile)?.[1];
  const others = /ARG AGENT_CLIS="([^"]*)"/.exec(dockerfile)?.[1]?.split(' ') ?? [];
  const bin: Record<string, string> = { '@openai/codex': 'codex', '@google/gemini-cli': 'gemini', 'opencode-ai': 'opencode' };
  const specs: Record<string, string> = { claude: `@anthropic-ai/claude-code@${claude}` };
  for (const spec of others) specs[bin[spec.slice(0, spec.lastIndexOf('@'))] ?? spec] = spec;
  return specs;
})();

/** What the provider's claude_oauth_token comes from (coder-support.ts `fastProvider`). */
const CLAUDE_TOKEN = 'claude-oauth-secret';

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

/** The secrets of a run, as the runner must end up with them. */
const secretsOf = (spec: WorkspaceSpec): RunnerSecrets => ({ ...runnerSecrets(spec), CLAUDE_CODE_OAUTH_TOKEN: CLAUDE_TOKEN });

/** The parameters that carried a secret of the run, found by their values: whatever they are called. */
function secretParameters(sent: Record<string, string>, spec: WorkspaceSpec): string[] {
  const secrets = new Set(Object.values(secretsOf(spec)));
  return Object.keys(sent).filter((name) => secrets.has(sent[name] as string));
}

/**
 * The environment Coder gives the workspace's processes: `coder_agent.env` with the parameters
 * filled in (the value sent, else the default, else empty) and the other expressions evaluated
 * as Terraform would with the variables' defaults.
 */
function agentEnv(t: Template, sent: Record<string, string>, workdir: string): Record<string, string> {
  const declared = new Map(parameters(t).map((p) => [p.name, p]));
  const variable = (name: string) => t.variable[name]?.[0]?.default;
  const expressions: Record<string, string> = {
    'local.workdir': workdir,
    'tostring(local.log_port)': '13338',
    'var.install_command': String(variable('install_command')),
    'var.build_command': String(variable('build_command')),
    'var.nested_sandbox == "on" ? "bwrap" : (var.nested_sandbox == "auto" ? "auto" : "")':
      variable('nested_sandbox') === 'on' ? 'bwrap' : variable('nested_sandbox') === 'auto' ? 'auto' : '',
  };
  const env: Record<string, string> = {};
  for (const [key, expression] of Object.entries(agent(t).env)) {
    const inner = /^\$\{(.+)\}$/.exec(expression)?.[1] ?? '';
    const parameter = /^data\.coder_parameter\.([a-z0-9_]+)\.value$/.exec(inner)?.[1];
    const value = parameter ? (sent[parameter] ?? declared.get(parameter)?.default ?? '') : expressions[inner];
    if (value === undefined) throw new Error(`the test does not know the value of ${expression} (env ${key}); add it`);
    env[key] = value;
  }
  return env;
}

/** Every script the template gives Coder to run: the startup script, metadata scripts, app commands. */
function scripts(t: Template): string[] {
  const found: string[] = [];
  const walk = (node: unknown, key: string) => {
    if (typeof node === 'string' && (key === 'script' || key === 'startup_script' || key === 'shutdown_script' || key === 'command')) {
      found.push(node);
    } else if (Array.isArray(node)) node.forEach((item) => walk(item, key));
    else if (node && typeof node === 'object') for (const [k, v] of Object.entries(node)) walk(v, k);
  };
  walk(t.resource, '');
  return found;
}

describe.each(FLAVOUR_NAMES)('the %s template against what baton sends', (flavour) => {
  it('declares the run’s parameters', () => {
    const names = parameters(templates[flavour]).map((p) => p.name);
    expect(names).toEqual(
      expect.arrayContaining(['callback_token', 'max_duration_ms', 'token_cap', 'stage_build', 'setup_tokens', 'stage_skip_permissions']),
    );
    expect(parameters(templates[flavour]).filter((p) => p.default === undefined).length).toBeGreaterThan(3);
  });

  it.each([
    ['an issue stage', specFor('bt-issue', { tokenCap: 200_000, build: 'heavy', setupTokens: ['forge', 'agent'], skipPermissions: false })],
    [
      'a repository-wide stage without a token cap',
      specFor('bt-maint', { stage: 'maintenance', number: undefined, deployEnv: undefined, forgeUrl: undefined }),
    ],
    ['a manual run with arguments and a branch', specFor('bt-manual', { arguments: 'only the parser, please', ref: 'feature/parser' })],
    ['a run on GitHub (its forge named)', specFor('bt-github', { forge: 'github' })],
    [
      'a Codex run with its model, command, price and key',
      specFor('bt-codex', {
        agent: 'codex',
        agentModel: 'gpt-5-codex',
        agentCommand: ['codex'],
        agentPrice: { input: 1.25, cachedInput: 0.125, output: 10 },
        agentSecret: { name: 'CODEX_API_KEY', value: 'codex-key-secret' },
      }),
    ],
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

  it('keeps the run’s secrets out of the environment under their own names and out of every script', async () => {
    const spec = specFor('bt-secrets', {
      setupTokens: ['forge'],
      agent: 'gemini',
      agentSecret: { name: 'GEMINI_API_KEY', value: 'gemini-key' },
    });
    const sent = await sentFor(spec);
    const secret = secretParameters(sent, spec);
    expect(secret.sort()).toEqual(['callback_token', 'claude_oauth_token', 'gemini_api_key', 'gitea_token']);
    // Every agent's key has its carrier, though a run sends only its own agent's.
    for (const name of ['codex_api_key', 'gemini_api_key', 'opencode_api_key']) secret.push(name);
    secret.splice(0, secret.length, ...new Set(secret));
    const env = agent(templates[flavour]).env;
    // Under the runner's names every process of the workspace, the agent included, would inherit them.
    expect(Object.keys(env).filter((key) => (RUNNER_SECRETS as readonly string[]).includes(key))).toEqual([]);
    // Each secret reaches the workspace once: as a BATON_HANDOFF_* entry, which the startup script
    // moves into the runner's secrets file; in no other entry, label, metadata or script.
    const text = JSON.stringify(templates[flavour]);
    for (const name of secret) {
      const reference = `\${data.coder_parameter.${name}.value}`;
      const carriers = Object.keys(env).filter((key) => env[key] === reference);
      expect(carriers, name).toHaveLength(1);
      expect(carriers[0], name).toMatch(/^BATON_HANDOFF_/);
      expect(text.split(`data.coder_parameter.${name}.value`).length - 1, `references to ${name}`).toBe(1);
    }
    // No parameter at all is rendered into a script, where Terraform would paste it unquoted.
    const rendered = scripts(templates[flavour]).filter((script) => script.includes('${data.coder_parameter.'));
    expect(rendered).toEqual([]);
    expect(scripts(templates[flavour]).length).toBeGreaterThan(2);
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

describe.each(FLAVOUR_NAMES)('the %s workspace scripts, run with sh', (flavour) => {
  let dir: string;
  let workdir: string;
  let tmp: string;
  let bin: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-template-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    workdir = fs.mkdtempSync(path.join(dir, 'work-'));
    tmp = fs.mkdtempSync(path.join(dir, 'tmp-'));
    bin = fs.mkdtempSync(path.join(dir, 'bin-'));
    // Stand-ins that record how they were called: `timeout` runs the rest of its argv as the real
    // one would, and `baton agent` records its environment (NUL-separated: values may hold
    // anything), leaves the secrets file for the test to read, writes two log lines and exits
    // with $FAKE_EXIT.
    fs.writeFileSync(path.join(bin, 'timeout'), '#!/bin/sh\necho "$@" > "$BATON_WORKDIR/timeout.args"\nshift 2\nexec "$@"\n', {
      mode: 0o755,
    });
    fs.writeFileSync(
      path.join(bin, 'baton'),
      '#!/bin/sh\nenv -0 > "$BATON_WORKDIR/runner.env"\nprintf "one\\ntwo\\n" > "$BATON_WORKDIR/.baton/agent.log"\nexit "${FAKE_EXIT:-0}"\n',
      { mode: 0o755 },
    );
  });

  const template = () => templates[flavour];
  const values = (variables: Record<string, string> = {}) => ({
    'local.workdir': workdir,
    'local.log_port': '13338',
    'var.baton_npm_spec': 'baton',
    'var.max_run_hours': '3',
    'var.agents': String(template().variable.agents?.[0]?.default),
    ...variables,
  });
  // The Coder agent runs a script as `<shell> -c <script>` with the agent's env (and its own token).
  const sh = (script: string, env: Record<string, string> = {}) => {
    const result = spawnSync('sh', ['-c', script], {
      cwd: workdir,
      encoding: 'utf8',
      // Only the stand-ins and the system's tools: no `baton` or `npm` from the test's own PATH.
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: dir, TMPDIR: tmp, BATON_WORKDIR: workdir, ...env },
    });
    return { code: result.status, out: result.stdout.trim(), err: result.stderr };
  };
  const status = () => sh(render(agent(template()).metadata.find((m) => m.key === 'run')?.script ?? '', values())).out;
  const startup = (env: Record<string, string> = {}, variables: Record<string, string> = {}) =>
    sh(render(agent(template()).startup_script, values(variables)), env);
  const exitFile = () => path.join(workdir, '.baton/runner.exit');
  const runnerExited = () =>
    until(() => fs.existsSync(exitFile()) && fs.readFileSync(exitFile(), 'utf8').trim() !== '', 'the runner to exit');
  /** The environment the stand-in runner recorded. */
  const runnerEnvironment = (): Record<string, string> =>
    Object.fromEntries(
      fs
        .readFileSync(path.join(workdir, 'runner.env'), 'utf8')
        .split('\0')
        .filter((entry) => entry !== '')
        .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
    );
  const secretsFiles = () => fs.readdirSync(tmp).filter((name) => name.startsWith('baton-secrets'));
  /** Command substitutions and backticks the shell would run if it ever interpreted a value. */
  const INJECTION = `'"$(touch x)\`touch y\`;touch z\\ %s $HOME`;
  const ranSomething = () => ['x', 'y', 'z'].some((name) => fs.existsSync(path.join(workdir, name)) || fs.existsSync(path.join(dir, name)));

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
    const first = startup({ BATON_MAX_DURATION_MS: String(5 * 3_600_000), FAKE_EXIT: '0', BATON_RUN_ID: '7', TASK_TYPE: 'develop' });
    expect(first).toMatchObject({ code: 0, out: expect.stringContaining('baton agent started for run 7 (develop)') });
    await runnerExited();
    expect(fs.readFileSync(path.join(workdir, 'timeout.args'), 'utf8').trim()).toBe(`--kill-after=60s ${5 * 3600 + 900}s baton agent`);
    expect(status()).toBe('complete, 2 log lines');
    // A second start (the agent reconnecting, a restarted container) never runs the stage again.
    fs.rmSync(path.join(workdir, 'timeout.args'));
    expect(startup().out).toMatch(/already ran in this workspace/);
    expect(fs.existsSync(path.join(workdir, 'timeout.args'))).toBe(false);
  });

  it('keeps max_run_hours as the floor of the backstop and reports a failed run', async () => {
    startup({ BATON_MAX_DURATION_MS: '60000', FAKE_EXIT: '1' });
    await runnerExited();
    expect(fs.readFileSync(path.join(workdir, 'timeout.args'), 'utf8').trim()).toBe('--kill-after=60s 10800s baton agent');
    expect(status()).toBe('failed (exit 1), 2 log lines');
  });

  it('hands the runner the run as the local provider does, its secrets only in a 0600 file it can read', async () => {
    const spec = specFor('bt-env', {
      tokenCap: 250_000,
      build: 'light',
      maxDurationMs: 45 * 60_000,
      setupTokens: ['forge', 'agent'],
      skipPermissions: false,
      arguments: 'explain $HOME; then stop',
      ref: 'release/2.0',
      forge: 'gitlab',
      agent: 'opencode',
      agentModel: 'anthropic/claude-sonnet-4-5',
      agentPrice: { input: 3, output: 15 },
      agentSecret: { name: 'OPENCODE_API_KEY', value: 'opencode-key-secret' },
    });
    const sent = await sentFor(spec);
    const result = startup({ ...agentEnv(template(), sent, workdir), CODER_AGENT_TOKEN: 'coder-agent-token' });
    expect(result).toMatchObject({ code: 0, out: expect.stringContaining('baton agent started for run 7 (develop)') });
    await runnerExited();

    const seen = runnerEnvironment();
    expect(seen).toMatchObject(runnerEnv(spec));
    expect(seen).toMatchObject({
      BATON_TOKEN_CAP: '250000',
      BATON_MAX_DURATION_MS: String(45 * 60_000),
      BATON_STAGE_BUILD: 'light',
      BATON_SETUP_TOKENS: 'forge,agent',
      BATON_STAGE_SKIP_PERMISSIONS: 'false',
      BATON_ARGUMENTS: 'explain $HOME; then stop',
      BATON_BRANCH: 'release/2.0',
      // The forge whose variables the runner gives the agent (GITLAB_TOKEN, CI_API_V4_URL).
      BATON_FORGE: 'gitlab',
      // The stage's agent, as baton.yaml chose it; its key only in the secrets file below.
      BATON_AGENT: 'opencode',
      BATON_AGENT_MODEL: 'anthropic/claude-sonnet-4-5',
      BATON_AGENT_PRICE: '{"input":3,"output":15}',
    });
    // No secret in the runner's environment, under any name; nor the Coder agent's token.
    const secretValues = new Set([...Object.values(secretsOf(spec)), 'coder-agent-token']);
    expect(Object.entries(seen).filter(([, value]) => secretValues.has(value))).toEqual([]);
    expect(Object.keys(seen).filter((key) => /^BATON_HANDOFF_|^CODER_AGENT_TOKEN$/.test(key))).toEqual([]);

    // The secrets file: outside the checkout, 0600, and what the real runner reads (and deletes).
    const file = seen.BATON_SECRETS_FILE ?? '';
    expect(path.dirname(file)).toBe(tmp);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const env: NodeJS.ProcessEnv = { BATON_SECRETS_FILE: file };
    expect(readRunnerSecrets(env)).toEqual({ secrets: secretsOf(spec), warnings: [] });
    expect(fs.existsSync(file)).toBe(false);
  });

  it('passes the stage settings empty when baton sends none, which the runner reads as its defaults', async () => {
    const spec = specFor('bt-defaults', { stage: 'maintenance', number: undefined, deployEnv: undefined });
    const sent = await sentFor(spec);
    startup(agentEnv(template(), sent, workdir));
    await runnerExited();
    const seen = runnerEnvironment();
    // Empty is what `baton agent` reads as unset: no setup tokens, skipPermissions true. The
    // nested sandbox is on wherever it can start.
    expect(seen).toMatchObject({ BATON_SETUP_TOKENS: '', BATON_STAGE_SKIP_PERMISSIONS: '', BATON_SANDBOX: 'auto' });
  });

  it('installs the agents’ CLIs its `agents` variable names and the image lacks, at the Dockerfile’s versions', async () => {
    // A stand-in npm that records what it installs and puts the CLI where a global install does.
    fs.writeFileSync(
      path.join(bin, 'npm'),
      '#!/bin/sh\necho "$@" >> "$BATON_WORKDIR/npm.args"\nmkdir -p "$HOME/.local/bin"\nprintf "#!/bin/sh\\n" > "$HOME/.local/bin/gemini"\nchmod +x "$HOME/.local/bin/gemini"\n',
      { mode: 0o755 },
    );
    fs.writeFileSync(path.join(bin, 'codex'), '#!/bin/sh\n', { mode: 0o755 });
    const result = startup({ TASK_TYPE: 'develop', BATON_RUN_ID: '7' }, { 'var.agents': 'codex,gemini' });
    expect(result).toMatchObject({ code: 0, out: expect.stringContaining('gemini is not in the image; installing @google/gemini-cli@') });
    await runnerExited();
    const installed = fs.readFileSync(path.join(workdir, 'npm.args'), 'utf8').trim().split('\n');
    expect(installed).toEqual([`install --global --prefix ${dir}/.local ${DOCKERFILE_AGENTS.gemini}`]);
    // The runner, and so the agent, finds what was installed.
    expect(runnerEnvironment().PATH?.split(':')[0]).toBe(`${dir}/.local/bin`);
  });

  it('pins the same CLI versions as the Dockerfile, and lets only known agents into its script', () => {
    const script = agent(template()).startup_script;
    for (const [cli, spec] of Object.entries(DOCKERFILE_AGENTS)) expect(script, cli).toContain(`${cli}) package="${spec}" ;;`);
    expect(Object.keys(DOCKERFILE_AGENTS).sort()).toEqual(['claude', 'codex', 'gemini', 'opencode']);
    const validation = (template().variable.agents?.[0] as { validation?: { condition: string }[] } | undefined)?.validation?.[0];
    expect(validation?.condition).toContain('contains(["", "claude", "codex", "gemini", "opencode"], cli)');
  });

  it('writes a token with quotes, `$(…)`, backticks and `%s` byte-exact into the 0600 file, and runs nothing', async () => {
    const token = `callback-${INJECTION}-end`;
    const claude = `claude ${INJECTION}`;
    const result = startup({ BATON_HANDOFF_CALLBACK_TOKEN: token, BATON_HANDOFF_CLAUDE_CODE_OAUTH_TOKEN: claude });
    expect(result.code).toBe(0);
    await runnerExited();
    const file = runnerEnvironment().BATON_SECRETS_FILE ?? '';
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    // An empty GITEA_TOKEN is left out: the runner treats a missing one as none.
    expect(fs.readFileSync(file)).toEqual(Buffer.from(`CALLBACK_TOKEN=${token}\nCLAUDE_CODE_OAUTH_TOKEN=${claude}\n`, 'utf8'));
    expect(ranSomething()).toBe(false);
    expect(result.out + result.err).not.toContain('callback-');
  });

  it('refuses a token with a line break before it could forge a line: names the parameter, starts nothing, leaves no file', () => {
    const token = `callback-${INJECTION}\nGITEA_TOKEN=forged\n$(touch x)`;
    const result = startup({ BATON_HANDOFF_CALLBACK_TOKEN: token, BATON_HANDOFF_GITEA_TOKEN: 'forge-secret' });
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/the callback_token parameter has a line break/);
    expect(result.out + result.err).not.toMatch(/callback-|forged|forge-secret/);
    expect(secretsFiles()).toEqual([]);
    expect(fs.existsSync(path.join(workdir, '.baton/runner.out'))).toBe(false);
    expect(fs.existsSync(path.join(workdir, 'timeout.args'))).toBe(false);
    expect(ranSomething()).toBe(false);
    // A carriage return is refused the same way (the runner's reader splits on \r\n).
    expect(startup({ BATON_HANDOFF_CLAUDE_CODE_OAUTH_TOKEN: 'claude\rCALLBACK_TOKEN=forged' }).err).toMatch(
      /the claude_oauth_token parameter has a line break/,
    );
    expect(secretsFiles()).toEqual([]);
  });

  it('removes the secrets file when the start fails before the runner runs', () => {
    // No `baton` in the image, and installing it fails.
    fs.rmSync(path.join(bin, 'baton'));
    fs.writeFileSync(path.join(bin, 'npm'), '#!/bin/sh\nenv -0 > "$BATON_WORKDIR/npm.env"\nexit 1\n', { mode: 0o755 });
    const result = startup({ BATON_HANDOFF_CALLBACK_TOKEN: 'callback-secret', CODER_AGENT_TOKEN: 'coder-agent-token' });
    expect(result.code).not.toBe(0);
    expect(secretsFiles()).toEqual([]);
    // npm runs package scripts: it inherits no secret either.
    const npmEnv = fs.readFileSync(path.join(workdir, 'npm.env'), 'utf8');
    expect(npmEnv).not.toMatch(/callback-secret|coder-agent-token/);
  });
});
