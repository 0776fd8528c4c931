import fs from 'node:fs';
import path from 'node:path';
import { makeUndumpable } from '../agent/index.js';
import { agentAdapter, agentsInUse } from '../agents/index.js';
import { createLogger } from '../log/index.js';
import { findCommand, parseAgentCommand } from '../runner-contract/index.js';
import { createConfiguredProvider, type Config } from '../server/index.js';
import { createCoderClient, IDENTITY_PARAMETER, WORKSPACE_PARAMETERS } from '../workspaces/index.js';
import { PROBE_MS, type Line } from './doctor-lines.js';
import type { CommandIo } from './io.js';

// baton doctor's workspace checks: the provider (local: the sandbox and the agent command, as a
// run sees them; coder: the token, the template and its parameters).

/** Longest the local sandbox check may take (it starts a sandboxed process, which can be slow on a busy machine). */
const SANDBOX_CHECK_MS = 90_000;

export async function checkWorkspaces(config: Config, io: CommandIo): Promise<Line[]> {
  return config.workspaceProvider === 'coder' ? checkCoder(config, io) : checkLocal(config);
}

/** Parameters deploy/coder/ declares for features a run may not use: an older template works without them. */
const OPTIONAL_PARAMETERS = [
  // Sent for GitHub and GitLab only: a template without it still serves Gitea runs.
  'forge',
  'max_duration_ms',
  'token_cap',
  'stage_build',
  'stage_arguments',
  'git_ref',
  'deploy_env',
  'resume_session_id',
  'resume_reply',
  'resume_by',
  'agent',
  'agent_model',
  'agent_command',
  'agent_price',
  'codex_api_key',
  'gemini_api_key',
  'opencode_api_key',
  // Without it workspaces are adopted by name (its own line below says what that risks).
  IDENTITY_PARAMETER,
];

async function checkCoder(config: Config, io: CommandIo): Promise<Line[]> {
  const { coder } = config;
  const lines: Line[] = [];
  const client = createCoderClient({ url: coder.url!, token: coder.token!, fetch: io.fetch, timeoutMs: PROBE_MS, retries: 0 });
  try {
    const user = await client.getUser(coder.user ?? 'me');
    if (!user) {
      lines.push({ status: 'FAIL', check: 'coder', detail: `Coder knows no user "${coder.user}"`, fix: 'fix coder.user' });
      return lines;
    }
    lines.push({ status: 'ok', check: 'coder', detail: `${coder.url} accepts CODER_TOKEN (user ${user.username})` });
  } catch (err) {
    lines.push({
      status: 'FAIL',
      check: 'coder',
      detail: (err as Error).message,
      fix: 'check CODER_URL and CODER_TOKEN (coder tokens create)',
    });
    return lines;
  }
  try {
    let versionId = coder.templateVersionId;
    if (!versionId) {
      const template = await client.getTemplate(coder.templateId!);
      if (!template) {
        lines.push({
          status: 'FAIL',
          check: 'coder template',
          detail: `no template ${coder.templateId} visible to this token`,
          fix: 'fix CODER_TEMPLATE_ID (coder templates list)',
        });
        return lines;
      }
      versionId = template.active_version_id;
      lines.push({ status: 'ok', check: 'coder template', detail: `${template.name} (${template.id}), active version ${versionId}` });
    }
    const parameters = await client.getTemplateVersionParameters(versionId);
    if (!parameters) {
      lines.push({
        status: 'FAIL',
        check: 'coder template',
        detail: `no template version ${versionId}`,
        fix: 'fix coder.templateVersionId',
      });
      return lines;
    }
    const declared = new Set(parameters.map((p) => p.name));
    const missing = WORKSPACE_PARAMETERS.filter((name) => !declared.has(name) && name !== IDENTITY_PARAMETER);
    const core = missing.filter((name) => !OPTIONAL_PARAMETERS.includes(name));
    if (core.length) {
      lines.push({
        status: 'FAIL',
        check: 'coder template',
        detail: `it lacks the parameters ${core.join(', ')}: it is not baton's template (the original orchestrator's has no callback_token)`,
        fix: 'push deploy/coder/ as a template and point CODER_TEMPLATE_ID at it (docs/coder.md)',
      });
    } else if (missing.length) {
      lines.push({
        status: 'warn',
        check: 'coder template',
        detail: `it lacks ${missing.join(', ')}: runs that use them (limits, manual arguments, branches, agents other than Claude Code) are refused by older Coder releases, and current ones drop those values (the run goes on without them)`,
        fix: 'push the current deploy/coder/ template',
      });
    } else if (declared.has(IDENTITY_PARAMETER)) {
      lines.push({ status: 'ok', check: 'coder template', detail: 'declares every parameter baton sends' });
    }
    if (!core.length && !declared.has(IDENTITY_PARAMETER)) {
      lines.push({
        status: 'warn',
        check: 'coder template',
        detail: `it lacks ${IDENTITY_PARAMETER}: a run adopts the live workspace of its name by name and age, not by whose it is, so after a database restore a run can take over the workspace of a run the backup does not know`,
        fix: 'push the current deploy/coder/ template (docs/operations.md#backups)',
      });
    }
    const unfilled = parameters.filter(
      (p) => p.required && !(WORKSPACE_PARAMETERS as readonly string[]).includes(p.name) && !(p.name in coder.parameters),
    );
    if (unfilled.length) {
      lines.push({
        status: 'FAIL',
        check: 'coder template',
        detail: `it requires ${unfilled.map((p) => p.name).join(', ')}, which baton does not send: every create would be refused`,
        fix: 'give them a default in the template, or values in coder.parameters',
      });
    }
  } catch (err) {
    lines.push({ status: 'FAIL', check: 'coder template', detail: (err as Error).message });
  }
  lines.push(nestedSandboxLine(coder.parameters.nested_sandbox));
  return lines;
}

/** The template's nested_sandbox as baton sets it (coder.parameters), else the template's default, auto. */
function nestedSandboxLine(value: string | undefined): Line {
  if (value === 'off')
    return {
      status: 'warn',
      check: 'nested sandbox',
      detail:
        "coder.parameters.nested_sandbox is off: each run's agent runs as the runner's uid beside it, seeing its files and processes; the runner makes itself undumpable (its memory and environment stay closed) and says so in its log",
      fix: 'remove nested_sandbox from coder.parameters (the template defaults to auto)',
    };
  return {
    status: 'ok',
    check: 'nested sandbox',
    detail: `nested_sandbox is ${value ?? 'auto (the template default)'}: each step of a run is in a sandbox of its own where the workspace allows user namespaces; a run's log warns where it does not`,
  };
}

/**
 * Whether a runner can make itself undumpable here, which is all that keeps the agent out of its
 * memory without a sandbox: tried on this process (the doctor, which reads nothing of itself
 * through /proc and ends soon), with the same Node and the same koffi binary a local runner loads.
 */
function runnerMemoryLine(): Line {
  const guard = makeUndumpable();
  return guard.undumpable
    ? {
        status: 'ok',
        check: 'runner memory',
        detail:
          "a runner makes itself undumpable: an agent of its uid cannot read the runner's memory or environment (callback token included)",
      }
    : {
        status: 'warn',
        check: 'runner memory',
        detail: `a runner cannot make itself undumpable (${guard.problem}): an agent of its uid can read its memory, callback token included`,
        fix: "reinstall baton's dependencies (npm ci) so koffi's prebuilt binary is there, or use the sandbox",
      };
}

async function checkLocal(config: Config): Promise<Line[]> {
  const lines: Line[] = [];
  const agent = agentCommandOf(config);
  if (agent === null) {
    lines.push({
      status: 'FAIL',
      check: 'agent command',
      detail: 'BATON_AGENT_COMMAND is not a JSON array of strings',
      fix: 'e.g. ["aider","--message","{prompt}"]',
    });
  } else {
    const found = findCommand(agent, process.env.PATH);
    lines.push(
      found
        ? { status: 'ok', check: 'agent command', detail: `${agent} is ${found}` }
        : {
            status: 'FAIL',
            check: 'agent command',
            detail: `${agent} is not on baton's PATH (${process.env.PATH ?? 'unset'})`,
            fix: 'npm install -g @anthropic-ai/claude-code, or set BATON_AGENT_COMMAND to its absolute path',
          },
    );
    if (agent === 'claude' && !config.claude.oauthToken && !config.local.claudeCredentials) {
      lines.push({
        status: 'warn',
        check: 'agent login',
        detail: 'neither CLAUDE_OAUTH_TOKEN nor local.claudeCredentials is set: claude has no login inside a run',
        fix: 'set CLAUDE_OAUTH_TOKEN (claude setup-token) or local.claudeCredentials (docs/troubleshooting.md#not-logged-in)',
      });
    }
  }
  lines.push(...otherAgents(config));
  // The check /ready uses: `baton agent --check` started exactly as a run is, sandbox and all.
  // It needs a throw-away workspace in the data directory; what it leaves of that goes again.
  const made = ['sandbox-checks', ''].map((sub) => path.join(config.dataDir, sub)).filter((dir) => !fs.existsSync(dir));
  const logger = createLogger({ level: 'silent' });
  const provider = createConfiguredProvider(config, logger, { findByWorkspace: async () => null });
  try {
    const deadline = Date.now() + SANDBOX_CHECK_MS;
    let health = provider.health?.() ?? { ok: true };
    while (!health.ok && /checking/.test(health.reason ?? '') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      health = provider.health?.() ?? { ok: true };
    }
    const sandbox = config.local.sandbox === 'none' ? 'no sandbox (local.sandbox: none)' : 'the bubblewrap sandbox';
    lines.push(
      health.ok
        ? { status: 'ok', check: 'local runs', detail: `a runner starts in ${sandbox} and finds the agent command` }
        : {
            status: 'FAIL',
            check: 'local runs',
            detail: health.reason ?? 'not ready',
            fix: /credentials|gitConfig/.test(health.reason ?? '')
              ? 'docs/troubleshooting.md#run-credentials'
              : 'docs/troubleshooting.md#sandbox-setup',
          },
    );
    if (config.local.sandbox === 'none')
      lines.push(
        {
          status: 'warn',
          check: 'local runs',
          detail: 'local.sandbox is none: runs see everything baton sees',
          fix: 'remove local.sandbox: none and install bubblewrap',
        },
        runnerMemoryLine(),
      );
  } finally {
    await provider.close?.();
    // Only directories this check made, and only when empty again (rmdir refuses anything else).
    for (const dir of made) {
      try {
        fs.rmdirSync(dir);
      } catch {
        // Not empty, or gone: left as it is.
      }
    }
  }
  return lines;
}

/** Each agent besides Claude Code that a stage runs: its CLI on the PATH, and its key. */
function otherAgents(config: Config): Line[] {
  const lines: Line[] = [];
  for (const name of agentsInUse(config.agents.default, config.pipeline.stages)) {
    if (name === 'claude' || name === 'text') continue;
    const adapter = agentAdapter(name);
    const settings = config.agents.settings[name];
    const executable = settings.command?.[0] ?? adapter.executable;
    const found = findCommand(executable, process.env.PATH);
    const stages = config.pipeline.stages.filter((s) => (s.agent ?? config.agents.default) === name).map((s) => s.name);
    lines.push(
      found
        ? { status: 'ok', check: `agent ${name}`, detail: `${adapter.title} (${stages.join(', ') || 'default'}) is ${found}` }
        : {
            status: 'FAIL',
            check: `agent ${name}`,
            detail: `${executable} (${adapter.title}, for ${stages.join(', ') || 'the default agent'}) is not on baton's PATH`,
            fix: `npm install -g ${adapter.npmPackage}, or set agents.${name}.command to its path`,
          },
    );
    if (!settings.apiKey && adapter.credential) {
      lines.push({
        status: 'warn',
        check: `agent ${name} login`,
        detail: `${adapter.credential.serverEnv} is not set: ${adapter.title} has no key inside a run`,
        fix: `set ${adapter.credential.serverEnv} (${adapter.credential.doc})`,
      });
    }
  }
  return lines;
}

/** The first word of BATON_AGENT_COMMAND, else `claude`; null when the variable is malformed. */
function agentCommandOf(config: Config): string | null {
  const raw = config.agentEnv.BATON_AGENT_COMMAND;
  if (raw === undefined) return 'claude';
  return parseAgentCommand(raw)?.[0] ?? null;
}
