import { agentAdapter, findPrice } from '../agents/index.js';
import { fileURLToPath } from 'node:url';
import { PermanentError } from '../background/index.js';
import { runLimits } from '../budgets/index.js';
import { SESSION_ID_FORM } from '../runner-contract/index.js';
import type { Config } from './config-types.js';
import type { EgressRefusal } from '../egress/index.js';
import { capabilityFor, GATEWAY_PREFIX } from '../forge-gateway/index.js';
import { githubCredentialOf } from '../forge/index.js';
import type { Logger } from '../log/index.js';
import {
  cloneSourceOf,
  findDeclaredRepository,
  FORGE_NAME_RULE,
  isBranchName,
  isForgeName,
  gitLabProjectPathProblem,
} from '../repositories/index.js';
import { hashCallbackToken, isLive, RUN_STATUS, type ForgeName, type RunService, type Run, type RunQueries } from '../runs/index.js';
import {
  createCoderProviderFromConfig,
  createLocalProviderFromConfig,
  NO_EGRESS_GATE_WARNING,
  NO_SANDBOX_WARNING,
  reconcile,
  workspaceNameForKey,
  type WorkspaceProvider,
  type WorkspaceSpec,
} from '../workspaces/index.js';

/** The `baton` bin of this installation: local workspaces run `baton agent` from it. */
const BATON_BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));

/** The provider `WORKSPACE_PROVIDER` names, made from the config. */
export function createConfiguredProvider(
  config: Config,
  logger: Logger,
  runs: Pick<RunQueries, 'findByWorkspace'>,
  egress: { onRefused?: (run: { runId: number; stage: string; workspace: string }, refusal: EgressRefusal) => void } = {},
): WorkspaceProvider {
  if (config.workspaceProvider === 'coder') {
    return createCoderProviderFromConfig(config, {
      // Workspace names are per run, so only the run that named it can own it.
      isOwnedByLiveRun: async (name) => {
        const run = await runs.findByWorkspace(name);
        return run !== null && isLive(run.status);
      },
      onWarning: (message) => logger.warn(message),
    });
  }
  if (config.local.sandbox === 'none') logger.warn(NO_SANDBOX_WARNING);
  else if (config.egress.gate === 'off') logger.warn(NO_EGRESS_GATE_WARNING);
  return createLocalProviderFromConfig(config, config.local, {
    batonBin: BATON_BIN,
    onEgressRefused: egress.onRefused,
    onError: (message, err) => logger.warn({ err }, message),
  });
}

/**
 * Readable (`develop-acme-app-7-r42`) and deterministic per run, so a re-claim after a crash finds
 * the workspace the first claim made, while a follow-up run never adopts its predecessor's. Made
 * from the run's parts, not its key (`develop:acme/app#7`), so names stay what they were before
 * keys changed; the run id alone makes them unique.
 */
export function workspaceName(run: Run): string {
  // A retried agent attempt gets a workspace of its own: the last one's is being torn down.
  const attempt = run.agentAttempt > 1 ? [`a${run.agentAttempt}`] : [];
  const parts = [run.stage, run.owner, run.repo, ...(run.number !== null ? [String(run.number)] : []), `r${run.id}`, ...attempt];
  return workspaceNameForKey(parts.join('-'));
}

/**
 * Everything a workspace is created with; the token is the stage's own bot account's only. Where
 * the workspace clones from comes from the configuration alone, never from the run's payload
 * (which a webhook sender wrote): a repository declared in baton.yaml from where the operator
 * said, with no forge token (it is not on the forge, and the token must not go to another host);
 * a `MAINTENANCE_REPOS` entry from its configured URL; any other from the forge. The same spec
 * goes to the local and the Coder provider.
 */
export function buildWorkspaceSpec(config: Config, run: Run, name: string, callbackToken: string): WorkspaceSpec {
  const review = run.payload.account === 'review';
  const forge = run.forge ?? 'gitea';
  // Each forge's own bot token: a GitHub run never gets Gitea's, nor the other way round. A
  // GitHub App's bot has none here: the gateway mints one for the run's repository.
  const account = review ? 'review' : 'dev';
  const botCredential =
    forge === 'github'
      ? githubCredentialOf(config.github, account)
      : forge === 'gitlab'
        ? ifToken(config.gitlab.tokens[account])
        : ifToken((review ? config.bots.review : config.bots.dev).token);
  const token = botCredential && 'token' in botCredential ? botCredential.token : undefined;
  const declared = findDeclaredRepository(config.repositories, run.owner, run.repo);
  const maintained = config.maintenance.repos.find((r) => r.owner === run.owner && r.repo === run.repo);
  const { arguments: args, ref } = run.payload;
  // A run reaches its forge (Gitea or Forgejo, GitHub, GitLab) only through baton's forge
  // gateway, with a capability worth nothing outside this run; the bot's token stays in baton.
  // Git goes through it too when the run clones the forge's own copy (`<clone URL or root>/<owner>/
  // <repo>.git` over http(s)): the gateway passes git to that base. Any other clone source (a
  // declared repository, a maintenance repository elsewhere, ssh or a path) is cloned directly,
  // with no forge credential: the bot's token never goes to another host.
  const direct = declared ? cloneSourceOf(declared) : (maintained?.cloneUrl ?? forgeCloneUrl(config, run.owner, run.repo, forge));
  const named = forge === 'github' || forge === 'gitlab' ? config[forge] : undefined;
  const forgeRoot = named ? named.url : config.gitea.url;
  const gateway = !declared && botCredential !== undefined && forgeRoot !== undefined;
  const gitBase = named ? (named.cloneUrl ?? named.url) : (config.gitea.cloneUrl ?? config.gitea.url);
  const cloneThroughGateway =
    gateway && gitBase !== undefined && originOf(gitBase) !== null && direct === `${gitBase}/${run.owner}/${run.repo}.git`;
  const gatewayBase = `${config.callbackUrl}${GATEWAY_PREFIX}`;
  const stage = config.pipeline.stages.find((s) => s.name === run.stage);
  const agent = stage?.agent ?? config.agents.default;
  const agentSettings = config.agents.settings[agent];
  const model = stage?.model ?? agentSettings.model;
  const adapter = agentAdapter(agent);
  const credential = adapter.credential;
  // Claude Code's token comes from claude.oauthToken through the provider, as before.
  const agentSecret =
    credential && credential.secret !== 'CLAUDE_CODE_OAUTH_TOKEN' && agentSettings.apiKey
      ? { name: credential.secret, value: agentSettings.apiKey }
      : undefined;
  // Priced for every agent: a CLI that reports no cost is priced with it, a reported cost checked against it.
  const price = findPrice(config.agents.prices, agent, model);
  const resume = resumeOf(run);
  const limits = runLimits(config.limits, stage, config.staleWorkspaceMinutes * 60_000);
  // The token cap counts the whole conversation: a resumed turn gets what the turns before left.
  if (resume && limits.tokenCap !== undefined) limits.tokenCap = Math.max(1, limits.tokenCap - resume.tokensBefore);
  // So does the duration limit: the agent's time of the turns before (never the wait for a reply).
  if (resume) limits.maxDurationMs = Math.max(1_000, limits.maxDurationMs - resume.msBefore);
  return {
    ...(agent !== 'claude' ? { agent } : {}),
    ...(model ? { agentModel: model } : {}),
    ...(agentSettings.command ? { agentCommand: agentSettings.command } : {}),
    ...(agentSecret ? { agentSecret } : {}),
    ...(price ? { agentPrice: price } : {}),
    name,
    runId: run.id,
    stage: run.stage,
    owner: run.owner,
    repo: run.repo,
    number: run.number ?? undefined,
    cloneUrl: cloneThroughGateway ? `${gatewayBase}/${run.owner}/${run.repo}.git` : direct,
    repositoryPath: declared?.source.kind === 'path' ? declared.source.path : undefined,
    arguments: typeof args === 'string' && args !== '' ? args : undefined,
    ref: typeof ref === 'string' && isBranchName(ref) ? ref : undefined,
    deployEnv: run.payload.deployEnv,
    build: run.payload.build === 'heavy' || run.payload.build === 'light' ? run.payload.build : undefined,
    skipPermissions: typeof run.payload.skipPermissions === 'boolean' ? run.payload.skipPermissions : undefined,
    setupTokens: Array.isArray(run.payload.setupTokens)
      ? run.payload.setupTokens.filter((t): t is 'forge' | 'agent' => t === 'forge' || t === 'agent')
      : undefined,
    forge,
    forgeUrl: gateway ? gatewayBase : forgeRoot,
    forgeToken: declared ? undefined : gateway ? capabilityFor(run.id, hashCallbackToken(callbackToken)) : token,
    callbackUrl: `${config.callbackUrl}/api/runs/${run.id}/complete`,
    callbackToken,
    ...(resume ? { resume: { sessionId: resume.sessionId, reply: resume.reply, by: resume.by } } : {}),
    ...limits,
  };
}

/**
 * `payload.resume` of a run a reply resumed (runs/conversation.ts): the session, the reply and who
 * wrote it, and the tokens and agent time the turns before used. null for a first turn, or a session id of no
 * form an agent CLI takes (the runner then starts afresh rather than pass it on).
 */
export function resumeOf(run: Run): { sessionId: string; reply: string; by: string; tokensBefore: number; msBefore: number } | null {
  const raw = run.payload.resume as Record<string, unknown> | undefined;
  if (!raw || typeof raw !== 'object' || typeof raw.sessionId !== 'string' || !SESSION_ID_FORM.test(raw.sessionId)) return null;
  const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? Math.max(0, value) : 0);
  return {
    sessionId: raw.sessionId,
    reply: typeof raw.prompt === 'string' ? raw.prompt : '',
    by: typeof raw.by === 'string' ? raw.by : 'someone',
    tokensBefore: count(raw.tokensBefore),
    msBefore: count(raw.msBefore),
  };
}

/**
 * `<GITEA_CLONE_URL or GITEA_URL>/<owner>/<repo>.git` (GitHub: `GITHUB_CLONE_URL` or `GITHUB_URL`;
 * GitLab: `GITLAB_CLONE_URL` or `GITLAB_URL`, the owner a namespace that may hold subgroups).
 * The names are checked again here, at the last step before a URL is made of them, whatever path
 * the run came in by (webhook, API, an older row): a name the forge could not have made is
 * refused for good rather than cloned.
 */
export function forgeCloneUrl(
  config: Pick<Config, 'gitea'> & Partial<Pick<Config, 'github' | 'gitlab'>>,
  owner: string,
  repo: string,
  forge: ForgeName = 'gitea',
): string | undefined {
  const named = forge === 'github' || forge === 'gitlab' ? config[forge] : undefined;
  const base = forge === 'github' || forge === 'gitlab' ? (named?.cloneUrl ?? named?.url) : (config.gitea.cloneUrl ?? config.gitea.url);
  if (!base) return undefined;
  if (forge === 'gitlab') {
    // A GitLab namespace may be a group's subgroups (`acme/platform`): each segment is checked.
    const problem = gitLabProjectPathProblem(`${owner}/${repo}`);
    if (problem)
      throw new PermanentError(`GitLab project path ${JSON.stringify(`${owner}/${repo}`.slice(0, 200))} ${problem}: nothing is cloned`);
    return `${base}/${owner}/${repo}.git`;
  }
  for (const [what, name] of [
    ['owner', owner],
    ['repository', repo],
  ] as const) {
    if (!isForgeName(name)) {
      throw new PermanentError(
        `${what} name ${JSON.stringify(name.slice(0, 100))} is not a Gitea name (${FORGE_NAME_RULE}): nothing is cloned`,
      );
    }
  }
  return `${base}/${owner}/${repo}.git`;
}

/**
 * Reconcile on start and on every sweep. A provisioning run whose workspace is up needs nothing
 * here: its lease expires, it is re-claimed, and the create adopts the workspace by name.
 */
export async function reconcileWorkspaces(
  engine: Pick<RunService, 'complete'>,
  runs: Pick<RunQueries, 'listLive'>,
  provider: WorkspaceProvider,
  logger: Logger,
): Promise<void> {
  await reconcile({
    provider,
    logger,
    runs: {
      listLive: async () => (await runs.listLive()).map((r) => ({ id: r.id, status: r.status, workspaceName: r.workspaceName })),
      adopt: async () => {},
      failRun: async (runId, reason) => {
        // `workspace_lost` is a failure that passes: the run is tried again (runs/retries.ts).
        await engine.complete(runId, { status: RUN_STATUS.failed, error: 'workspace_lost', summary: reason });
      },
    },
  });
}

/** The origin of an http(s) URL; null for anything else (a path, a file: URL). */
function originOf(url: string): string | null {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : null;
  } catch {
    return null;
  }
}

const ifToken = (token: string | undefined) => (token ? { token } : undefined);
