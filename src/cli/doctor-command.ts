import { agentAdapter, agentsInUse } from '../agents/index.js';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { findCommand, parseAgentCommand } from '../runner-contract/index.js';
import { loadConfig, type Config } from '../server/index.js';
import { ConfigError } from '../config-schema/index.js';
import { createGiteaClient, createGitHubClient, ForgeError, type ForgeClient } from '../forge/index.js';
import { createLogger } from '../log/index.js';
import { parseRepositoryName } from '../repositories/index.js';
import { createConfiguredProvider } from '../server/index.js';
import { createStore, parseDatabaseUrl } from '../store/index.js';
import { createCoderClient, WORKSPACE_PARAMETERS } from '../workspaces/index.js';
import { UsageError } from './args.js';
import { type CommandIo, visibleIo } from './io.js';
import { isPrivateOrLoopbackUrl } from './network.js';

const USAGE = 'usage: baton doctor [--repo OWNER/REPO]…';

export const DOCTOR_HELP = `${USAGE}

Checks every part of this baton's configuration and prints one line per check: ok, warn, FAIL
or info, what was found, and for anything not ok, what to change. It reads the configuration as
baton serve does (run it where baton serve runs, with the same environment), opens the database,
and asks the forge and Coder; it changes nothing.

Checked: the configuration; the database and its migrations; the data directory; the forge
(GITEA_URL, the webhook secret, each bot's token: valid, of the expected user, its scopes, and
its rights on each repository); PUBLIC_URL; the workspace provider (local: the sandbox and the
agent command, as a run sees them; coder: the token, the template and its parameters); and
whether CALLBACK_URL answers.

Options:
  --repo OWNER/REPO   also check the bots' access to this repository (repeatable); the
                      repositories named in webhooks.allow, webhooks.repositories and
                      maintenance.repos are always checked
  -h, --help          show this help

Exit code 0 when nothing failed, 1 otherwise.`;

type Status = 'ok' | 'warn' | 'FAIL' | 'info';
interface Line {
  status: Status;
  check: string;
  detail: string;
  fix?: string;
}

/** Longest a network check waits: a doctor must answer, even about a silent server. */
const PROBE_MS = 5_000;
/** Longest the local sandbox check may take (it starts a sandboxed process, which can be slow on a busy machine). */
const SANDBOX_CHECK_MS = 90_000;

/** `baton doctor`: every configured part checked, one line each with a fix. Changes nothing. */
export async function doctorCommand(argv: string[], rawIo: CommandIo, cwd = process.cwd()): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  let values: { repo?: string[]; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { repo: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(`baton doctor: ${(err as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    io.out(DOCTOR_HELP);
    return 0;
  }
  const extraRepos = (values.repo ?? []).map((r) => {
    const name = parseRepositoryName(r);
    if (!name) throw new UsageError(`baton doctor: --repo must be OWNER/REPO, got "${r}"\n${USAGE}`);
    return `${name.owner}/${name.repo}`;
  });

  let failed = 0;
  const print = (line: Line) => {
    if (line.status === 'FAIL') failed++;
    io.out(`${line.status.padEnd(4)}  ${line.check}: ${line.detail}${line.fix ? ` → ${line.fix}` : ''}`);
  };

  let config: Config;
  try {
    const loaded = loadConfig(io.env, cwd);
    config = loaded.config;
    print({
      status: 'ok',
      check: 'configuration',
      detail: config.configFile ? `environment and ${config.configFile}` : 'environment only (no baton.yaml)',
    });
    for (const warning of loaded.warnings) print({ status: 'warn', check: 'configuration', detail: warning });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const problem of err.problems) print({ status: 'FAIL', check: 'configuration', detail: problem });
    io.out('baton doctor: fix the configuration first; nothing else was checked');
    return 1;
  }

  for (const group of [checkDatabase, checkDataDir, checkForge, checkGitHub, checkPublicUrl, checkWorkspaces, checkCallbackUrl]) {
    for (const line of await group(config, io, extraRepos)) print(line);
  }
  io.out(failed ? `${failed} check${failed === 1 ? '' : 's'} failed` : 'everything checked is fine');
  return failed ? 1 : 0;
}

async function checkDatabase(config: Config): Promise<Line[]> {
  const shown = config.database.url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:********@');
  const target = parseDatabaseUrl(config.database.url);
  // Opening a SQLite file that is not there would create it: the doctor changes nothing.
  if ('kind' in target && target.kind === 'sqlite' && target.file !== ':memory:' && !fs.existsSync(target.file)) {
    return [{ status: 'info', check: 'database', detail: `${shown} does not exist yet; baton serve creates it` }];
  }
  const store = createStore({
    url: config.database.url,
    sqliteSynchronous: config.database.sqliteSynchronous,
    timeouts: config.database.timeouts,
  });
  try {
    await store.ping();
    const pending = await store.pendingMigrations();
    if (pending.length)
      return [
        {
          status: 'warn',
          check: 'database',
          detail: `${shown} answers; migrations not applied yet: ${pending.join(', ')}`,
          fix: 'baton serve applies them at start, or run baton migrate',
        },
      ];
    return [{ status: 'ok', check: 'database', detail: `${shown} answers, migrations current` }];
  } catch (err) {
    return [
      {
        status: 'FAIL',
        check: 'database',
        detail: `${shown}: ${(err as Error).message}`,
        fix: 'check DATABASE_URL and that the database server runs',
      },
    ];
  } finally {
    await store.close().catch(() => {});
  }
}

async function checkDataDir(config: Config): Promise<Line[]> {
  const dir = config.dataDir;
  const check = 'data directory';
  if (!fs.existsSync(dir)) {
    const parent = path.dirname(dir);
    try {
      fs.accessSync(parent, fs.constants.W_OK);
      return [{ status: 'info', check, detail: `${dir} does not exist yet; baton serve makes it` }];
    } catch {
      return [
        { status: 'FAIL', check, detail: `${dir} does not exist and ${parent} is not writable`, fix: 'create it, or set BATON_DATA_DIR' },
      ];
    }
  }
  const probe = path.join(dir, `.doctor-${process.pid}`);
  try {
    fs.writeFileSync(probe, '');
    fs.rmSync(probe);
    return [{ status: 'ok', check, detail: `${dir} is writable` }];
  } catch (err) {
    return [
      {
        status: 'FAIL',
        check,
        detail: `${dir} is not writable (${(err as NodeJS.ErrnoException).code})`,
        fix: 'fix its owner or mode, or set BATON_DATA_DIR',
      },
    ];
  }
}

/** The repositories the configuration names exactly (patterns with `*` name none). */
function configuredRepositories(config: Config, extra: readonly string[]): string[] {
  const names = [
    ...extra,
    ...Object.keys(config.webhooks.repositories),
    ...config.maintenance.repos.map((r) => `${r.owner}/${r.repo}`),
    ...config.webhooks.allow.filter((p) => !p.includes('*')),
  ];
  const seen = new Map<string, string>();
  for (const name of names) if (!seen.has(name.toLowerCase())) seen.set(name.toLowerCase(), name);
  return [...seen.values()];
}

async function checkForge(config: Config, io: CommandIo, extra: readonly string[]): Promise<Line[]> {
  const lines: Line[] = [];
  const url = config.gitea.url;
  if (!url && config.github.url) {
    lines.push({ status: 'info', check: 'forge', detail: 'GITEA_URL is not set: Gitea and Forgejo are off (GitHub is configured)' });
    return lines;
  }
  if (!url) {
    lines.push({
      status: 'warn',
      check: 'forge',
      detail: 'GITEA_URL is not set: no webhooks are acted on with status comments, and only repositories declared in baton.yaml can run',
      fix: 'set GITEA_URL, GITEA_DEV_TOKEN and GITEA_REVIEW_TOKEN (docs/gitea.md)',
    });
    return lines;
  }
  lines.push(webhookSecretLine(config));
  const repos = configuredRepositories(config, extra);
  for (const [account, bot] of Object.entries(config.bots)) {
    const variable = `GITEA_${account.toUpperCase()}_TOKEN`;
    const check = `bot ${account}`;
    if (!bot.token) {
      lines.push({
        status: 'FAIL',
        check,
        detail: `${variable} is not set`,
        fix: `give the ${bot.username} account's token (docs/gitea.md)`,
      });
      continue;
    }
    const client = createGiteaClient({ baseUrl: url, token: bot.token, fetch: io.fetch, timeoutMs: PROBE_MS });
    try {
      const me = await client.getCurrentUser();
      if (me.login.toLowerCase() !== bot.username.toLowerCase()) {
        lines.push({
          status: 'FAIL',
          check,
          detail: `${variable} belongs to ${me.login}, not to ${bot.username}`,
          fix: `use ${bot.username}'s token, or set BOT_${account.toUpperCase()}_USERNAME=${me.login}`,
        });
        continue;
      }
      lines.push({ status: 'ok', check, detail: `${variable} is ${me.login}'s and valid (scope read:user)` });
    } catch (err) {
      lines.push({ status: 'FAIL', check, ...forgeFailure(err, variable, bot.username) });
      continue;
    }
    for (const full of repos) lines.push(...(await checkBotOnRepository(client, config, account, bot.username, full)));
  }
  if (repos.length === 0) {
    lines.push({
      status: 'info',
      check: 'repositories',
      detail: 'no repository named in the configuration: the bots’ rights were not checked',
      fix: 'run baton doctor --repo OWNER/REPO',
    });
  }
  return lines;
}

/**
 * GitHub's bot tokens, when GITHUB_URL is set: each must be valid and belong to the bot login the
 * pipeline knows (BOT_*_USERNAME), or the bot's own comments would start stages again.
 */
async function checkGitHub(config: Config, io: CommandIo): Promise<Line[]> {
  const { apiUrl, tokens, webhookSecret } = config.github;
  if (!apiUrl) return [];
  const lines: Line[] = [
    webhookSecret
      ? { status: 'ok', check: 'github webhook secret', detail: 'GITHUB_WEBHOOK_SECRET is set: unsigned GitHub deliveries get 401' }
      : { status: 'FAIL', check: 'github webhook secret', detail: 'GITHUB_WEBHOOK_SECRET is not set', fix: 'set it (docs/github.md)' },
  ];
  for (const [account, bot] of Object.entries(config.bots)) {
    const variable = `GITHUB_${account.toUpperCase()}_TOKEN`;
    const check = `github bot ${account}`;
    const token = tokens[account as 'dev' | 'review'];
    if (!token) {
      lines.push({ status: 'FAIL', check, detail: `${variable} is not set`, fix: 'give the machine user’s token (docs/github.md)' });
      continue;
    }
    try {
      const me = await createGitHubClient({ apiUrl, token, fetch: io.fetch, timeoutMs: PROBE_MS }).getCurrentUser();
      if (me.login.toLowerCase() !== bot.username.toLowerCase()) {
        lines.push({
          status: 'FAIL',
          check,
          detail: `${variable} belongs to ${me.login}, not to ${bot.username}`,
          fix: `use ${bot.username}'s token, or set BOT_${account.toUpperCase()}_USERNAME=${me.login}`,
        });
      } else lines.push({ status: 'ok', check, detail: `${variable} is ${me.login}'s and valid` });
    } catch (err) {
      lines.push({ status: 'FAIL', check, ...forgeFailure(err, variable, bot.username) });
    }
  }
  return lines;
}

async function checkBotOnRepository(client: ForgeClient, config: Config, account: string, login: string, full: string): Promise<Line[]> {
  const [owner, repo] = full.split('/') as [string, string];
  const check = `bot ${account} on ${full}`;
  try {
    const repository = await client.getRepository(owner, repo);
    const writing = await client.issueWriteAccess(owner, repo);
    if (!writing.allowed) {
      return [
        {
          status: 'FAIL',
          check,
          detail: `cannot comment: ${writing.reason}`,
          fix: `give the token the write:issue scope, and ${login} access to ${full}`,
        },
      ];
    }
    const lines: Line[] = [];
    if (repository.archived)
      lines.push({
        status: 'FAIL',
        check,
        detail: `${full} is archived: nothing can be posted there`,
        fix: 'unarchive it, or remove it from the configuration',
      });
    if (account === 'dev' && !repository.permissions.push) {
      lines.push({
        status: 'warn',
        check,
        detail: `${login} can read and comment but not push`,
        fix: `give ${login} write access to ${full}`,
      });
    } else {
      lines.push({
        status: 'ok',
        check,
        detail: `${login} can read and comment${repository.permissions.push ? ', and push' : ''} (scopes read:repository, write:issue)`,
      });
    }
    if (account === 'dev' && config.webhooks.requireWritePermission && !repository.permissions.admin) {
      lines.push({
        status: 'FAIL',
        check,
        detail: 'webhooks.requireWritePermission asks Gitea for each sender’s permission, which only a repository admin may',
        fix: `give ${login} admin access to ${full}, or turn webhooks.requireWritePermission off (docs/troubleshooting.md#permission-failures)`,
      });
    }
    return lines;
  } catch (err) {
    return [{ status: 'FAIL', check, ...forgeFailure(err, `GITEA_${account.toUpperCase()}_TOKEN`, login, full) }];
  }
}

function forgeFailure(err: unknown, variable: string, login: string, full?: string): { detail: string; fix?: string } {
  if (!(err instanceof ForgeError)) return { detail: (err as Error).message };
  if (err.status === 401) return { detail: `the forge rejects ${variable} (401)`, fix: `make a new token for ${login}` };
  if (err.status === 403 && /scope/i.test(err.forgeMessage ?? ''))
    return {
      detail: `the forge refuses: ${err.forgeMessage}`,
      fix: `make a token for ${login} with the scopes read:user, read:repository, write:issue`,
    };
  if (err.status === 404 && full) return { detail: `${login} cannot see ${full}`, fix: `add ${login} as a collaborator of ${full}` };
  if (err.kind === 'network' || err.kind === 'timeout')
    return { detail: err.message, fix: 'check GITEA_URL and that the forge answers from here' };
  return { detail: err.message };
}

async function checkPublicUrl(config: Config, io: CommandIo): Promise<Line[]> {
  const url = config.publicUrl;
  if (!url) return [{ status: 'info', check: 'PUBLIC_URL', detail: 'not set: baton connect needs it to point webhooks at baton' }];
  const lines: Line[] = [];
  if (isPrivateOrLoopbackUrl(url))
    lines.push({
      status: 'warn',
      check: 'PUBLIC_URL',
      detail: `${url} is a loopback or private address`,
      fix: 'Gitea delivers there only when its admin allows it in [webhook] ALLOWED_HOST_LIST (docs/gitea.md)',
    });
  lines.push(await answers('PUBLIC_URL', url, io));
  return lines;
}

async function checkCallbackUrl(config: Config, io: CommandIo): Promise<Line[]> {
  const url = config.callbackUrl;
  const lines: Line[] = [];
  if (config.workspaceProvider === 'coder' && isLoopback(url)) {
    lines.push({
      status: 'FAIL',
      check: 'CALLBACK_URL',
      detail: `${url} is this machine as a Coder workspace sees itself: runs could never report back`,
      fix: 'set CALLBACK_URL to the address at which workspaces reach baton',
    });
  }
  lines.push(await answers('CALLBACK_URL', url, io));
  return lines;
}

/** Whether `url/health` answers from here (which a workspace elsewhere may still not reach). */
async function answers(check: string, url: string, io: CommandIo): Promise<Line> {
  try {
    const response = await (io.fetch ?? fetch)(`${url}/health`, { signal: AbortSignal.timeout(PROBE_MS) });
    if (response.ok) return { status: 'ok', check, detail: `${url}/health answers from this machine` };
    return {
      status: 'warn',
      check,
      detail: `${url}/health answered ${response.status} from this machine`,
      fix: 'is it baton behind that address?',
    };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    return {
      status: 'warn',
      check,
      detail: `${url}/health does not answer from this machine (${cause})`,
      fix: 'start baton serve, or check the address',
    };
  }
}

async function checkWorkspaces(config: Config, io: CommandIo): Promise<Line[]> {
  return config.workspaceProvider === 'coder' ? checkCoder(config, io) : checkLocal(config);
}

/** Parameters deploy/coder/ declares for features a run may not use: an older template works without them. */
const OPTIONAL_PARAMETERS = [
  'max_duration_ms',
  'token_cap',
  'stage_build',
  'stage_arguments',
  'git_ref',
  'deploy_env',
  'resume_session_id',
  'resume_reply',
  'resume_by',
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
    const missing = WORKSPACE_PARAMETERS.filter((name) => !declared.has(name));
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
        detail: `it lacks ${missing.join(', ')}: runs that use them (limits, manual arguments, branches) are refused by Coder`,
        fix: 'push the current deploy/coder/ template',
      });
    } else {
      lines.push({ status: 'ok', check: 'coder template', detail: 'declares every parameter baton sends' });
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
  return lines;
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
      lines.push({
        status: 'warn',
        check: 'local runs',
        detail: 'local.sandbox is none: runs see everything baton sees',
        fix: 'remove local.sandbox: none and install bubblewrap',
      });
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

function isLoopback(url: string): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || host.startsWith('127.');
  } catch {
    return false;
  }
}

/** Signatures are required: a secret from the environment or the one serve generated, or an explicit opt-out. */
function webhookSecretLine(config: Config): Line {
  const check = 'webhook secret';
  if (config.gitea.webhookSecret) {
    const from = config.gitea.webhookSecretFile
      ? `generated by baton serve, in ${config.gitea.webhookSecretFile}`
      : 'WEBHOOK_SECRET is set';
    return { status: 'ok', check, detail: `${from}: unsigned deliveries are refused` };
  }
  if (config.webhooks.allowUnsigned) {
    return {
      status: 'warn',
      check,
      detail: 'no webhook secret and webhooks.allowUnsigned is true: anyone who can reach baton can send it forged deliveries',
      fix: 'turn webhooks.allowUnsigned off; baton serve then generates a secret (or set WEBHOOK_SECRET), and run baton connect --recreate',
    };
  }
  return {
    status: 'warn',
    check,
    detail: 'no webhook secret yet: baton serve generates one in the data directory at its next start; until then every delivery gets 401',
    fix: 'start baton serve once (or set WEBHOOK_SECRET, e.g. openssl rand -hex 32), then run baton connect OWNER/REPO',
  };
}
