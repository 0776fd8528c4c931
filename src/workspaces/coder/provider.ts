import { PermanentError } from '../../background/index.js';
import { type Workspace, type WorkspaceProvider, type WorkspaceSpec, type WorkspaceStatus } from '../types.js';
import type { CoderCreateWorkspaceRequest, CoderResponse, CoderRichParameter, CoderTransition, CoderWorkspace } from './api-types.js';
import { createCoderClient, systemClock, type Clock, type CoderClient } from './client.js';
import { CoderApiError, CoderWaitTimeoutError } from './errors.js';
import { createIdentityCheck, tokenHashOf } from './identity.js';
import { BATON_WORKSPACE_NAME_PATTERN, coderNameProblem } from './names.js';

export interface CoderProviderOptions {
  /** Coder deployment URL, without `/api/v2`. @example 'https://coder.example.com' */
  url: string;
  /** Session or API token (`CODER_TOKEN`). */
  token: string;
  /**
   * Template to create from (`CODER_TEMPLATE_ID`); also how baton recognises its workspaces.
   * At least one of this and `templateVersionId` is required.
   */
  templateId?: string;
  /** Creates from this pinned version instead of the template's active one (sent instead of `templateId`). */
  templateVersionId?: string;
  /** A template version preset (`template_version_preset_id`), used together with one of the above. */
  presetId?: string;
  /**
   * Whose workspaces: username, user id or `me` (the token's user). A user id is resolved to its
   * username once, because Coder's `owner:` search filter takes usernames only. @default 'me'
   */
  user?: string;
  /** Sent to every workspace as rich parameters, after baton's own; a spec's `extra` wins over these. */
  extraParameters?: Record<string, string>;
  /** Sent as the `claude_oauth_token` parameter. */
  claudeOauthToken?: string;
  /**
   * A running workspace whose name is taken, older than this and owned by no live run, is stale:
   * deleted and recreated. A younger one is adopted. @default 1_800_000 (30 min)
   */
  staleAfterMs?: number;
  /**
   * Whether a live run owns this workspace. Asked only for old running workspaces on a name
   * conflict. The workspace is passed so the caller can tell its own workspace (created after the
   * run started) from a leftover of an earlier run with the same key (created before it).
   */
  isOwnedByLiveRun: (name: string, workspace: Workspace) => Promise<boolean>;
  /**
   * Told when a workspace of a run's name is another run's (deleted and made again) or says
   * nothing of whose it is (adopted by name); the message names no secret.
   */
  onWarning?: (message: string) => void;
  /** Which names `list()` reports as baton's. @default BATON_WORKSPACE_NAME_PATTERN (`bt-…`) */
  namePattern?: RegExp;
  /** Per-request timeout. @default 30_000 */
  timeoutMs?: number;
  /** Retries of 5xx, resets and timeouts per request. @default 4 */
  retries?: number;
  /** @default 500 */
  retryBaseMs?: number;
  /** Interval between polls while waiting on a build. @default 2_000 */
  pollMs?: number;
  /**
   * How long a stop or delete waits for another active build to finish before giving up (stop) or
   * cancelling it (delete). @default 120_000
   */
  activeBuildWaitMs?: number;
  /** How long create waits for a conflicting workspace to be deleted. @default 300_000 */
  waitGoneMs?: number;
  /** Used when a spec has no `maxDurationMs`. @default 7_200_000 (2 h) */
  defaultMaxDurationMs?: number;
  fetch?: typeof fetch;
  clock?: Clock;
}

export interface ProviderHealth {
  ok: boolean;
  /** Why the provider is unhealthy, naming it; safe to show on `/ready`. */
  reason?: string;
}

export interface CoderProvider extends WorkspaceProvider {
  readonly name: 'coder';
  /** Unhealthy after Coder rejected the token (401/403) until a later request succeeds. */
  health(): ProviderHealth;
  /** Waits until the workspace is running; throws when its build fails or it disappears. */
  waitUntilRunning(name: string, options?: { timeoutMs?: number }): Promise<Workspace>;
}

/** Coder refuses `ttl_ms` below one minute and at or above 30 days. */
export const CODER_TTL_MIN_MS = 60_000;
export const CODER_TTL_MAX_MS = 30 * 24 * 3_600_000 - 60_000;
const TTL_MARGIN_MS = 15 * 60_000;

/** A TTL that outlasts the run, so Coder's autostop never cuts a working agent. */
export function ttlForRun(maxDurationMs: number): number {
  const ttl = maxDurationMs + Math.max(TTL_MARGIN_MS, Math.round(maxDurationMs * 0.1));
  return Math.min(CODER_TTL_MAX_MS, Math.max(CODER_TTL_MIN_MS, ttl));
}

const STATUS_MAP: Record<string, WorkspaceStatus> = {
  pending: 'pending',
  starting: 'starting',
  running: 'running',
  stopping: 'stopping',
  stopped: 'stopped',
  failed: 'failed',
  // A cancel in flight is not final: report it as a transition so nobody treats it as settled.
  canceling: 'stopping',
  canceled: 'canceled',
  deleting: 'deleting',
  deleted: 'deleted',
  restarting: 'starting',
  restarted: 'running',
};

export function toWorkspace(ws: CoderWorkspace): Workspace {
  return {
    id: ws.id,
    name: ws.name,
    status: STATUS_MAP[ws.latest_build.status] ?? 'pending',
    createdAt: Date.parse(ws.created_at),
  };
}

const ACTIVE_JOB = new Set(['pending', 'running', 'canceling']);
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/**
 * The rich parameters baton sends to every workspace (deploy/coder/ declares them): the contract
 * `baton doctor` checks a template against. Optional ones are sent only when the run has them.
 */
export const WORKSPACE_PARAMETERS = [
  'task_type',
  'issue_number',
  'gitea_url',
  'forge',
  'gitea_org',
  'gitea_repo',
  'gitea_token',
  'claude_oauth_token',
  'repo_clone_url',
  'callback_url',
  'callback_token',
  'callback_token_hash',
  'deploy_env',
  'run_id',
  'max_duration_ms',
  'token_cap',
  'stage_build',
  'setup_tokens',
  'stage_skip_permissions',
  'stage_arguments',
  'git_ref',
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
] as const;
export type WorkspaceParameter = (typeof WORKSPACE_PARAMETERS)[number];

/** The run's agent credential as the parameter the template moves into the runner's secrets file. */
function agentKeys(spec: WorkspaceSpec): Record<AgentKeyParameter, string | undefined> {
  const name = spec.agentSecret?.name.toLowerCase();
  const key = (parameter: AgentKeyParameter) => (name === parameter ? spec.agentSecret?.value : undefined);
  return { codex_api_key: key('codex_api_key'), gemini_api_key: key('gemini_api_key'), opencode_api_key: key('opencode_api_key') };
}
type AgentKeyParameter = 'codex_api_key' | 'gemini_api_key' | 'opencode_api_key';

/** Create attempts per call; each 409 round either adopts, waits, or deletes first. */
const MAX_CONFLICT_ROUNDS = 6;

export function createCoderProvider(options: CoderProviderOptions): CoderProvider {
  if (!options.url) throw new TypeError('createCoderProvider: `url` (CODER_URL) is required');
  if (!options.token) throw new TypeError('createCoderProvider: `token` (CODER_TOKEN) is required');
  if (!options.templateId && !options.templateVersionId) {
    throw new TypeError(
      'createCoderProvider: `templateId` (CODER_TEMPLATE_ID) or `templateVersionId` is required' +
        (options.presetId ? ' (a preset is used together with one of them)' : ''),
    );
  }
  const user = options.user ?? 'me';
  const clock = options.clock ?? systemClock;
  const staleAfterMs = options.staleAfterMs ?? 30 * 60_000;
  const pollMs = options.pollMs ?? 2_000;
  const activeBuildWaitMs = options.activeBuildWaitMs ?? 120_000;
  const waitGoneMs = options.waitGoneMs ?? 300_000;
  const namePattern = options.namePattern ?? BATON_WORKSPACE_NAME_PATTERN;
  // With a pinned version the template id is learned from the workspaces baton creates.
  const knownTemplateIds = new Set<string>(options.templateId ? [options.templateId] : []);
  let health: ProviderHealth = { ok: true };

  const client: CoderClient = createCoderClient({
    url: options.url,
    token: options.token,
    timeoutMs: options.timeoutMs,
    retries: options.retries,
    retryBaseMs: options.retryBaseMs,
    fetch: options.fetch,
    clock,
    onAuthFailure(error) {
      health = { ok: false, reason: `coder provider: ${error.message}` };
    },
    onSuccess() {
      if (!health.ok) health = { ok: true };
    },
  });

  const { templateDeclaresIdentity, identityOf } = createIdentityCheck({
    client,
    clock,
    templateId: options.templateId,
    templateVersionId: options.templateVersionId,
    onWarning: options.onWarning,
  });

  /** Template and owner say whether a workspace is baton's; the name pattern is checked by list. */
  const isManaged = (ws: CoderWorkspace): boolean => {
    if (user !== 'me' && ws.owner_name !== user && ws.owner_id !== user) return false;
    if (knownTemplateIds.has(ws.template_id)) return true;
    return options.templateVersionId !== undefined && ws.latest_build.template_version_id === options.templateVersionId;
  };

  /**
   * The value for the `owner:` search filter. Coder matches `owner:` against usernames only
   * (`queries/workspaces.sql`): `owner:<uuid>` silently lists nothing, which would make every
   * reconcile see no workspaces at all. So a user id is resolved to its username first, once.
   */
  let ownerFilter: Promise<string> | undefined;
  const resolveOwnerFilter = (): Promise<string> => {
    if (!UUID_PATTERN.test(user)) return Promise.resolve(user);
    ownerFilter ??= client.getUser(user).then(
      (found) => {
        if (!found) {
          throw new PermanentError(`coder.user ${JSON.stringify(user)} is not a user Coder knows (GET /api/v2/users/${user})`);
        }
        return found.username;
      },
      (error: unknown) => {
        // Not cached: a Coder outage must not pin the failure; the next call asks again.
        ownerFilter = undefined;
        throw error;
      },
    );
    return ownerFilter;
  };

  const lookup = async (name: string): Promise<CoderWorkspace | null> => {
    const ws = await client.getWorkspaceByName(user, name);
    if (!ws || ws.latest_build.status === 'deleted' || !isManaged(ws)) return null;
    return ws;
  };

  function createRequest(spec: WorkspaceSpec, sendIdentity: boolean): CoderCreateWorkspaceRequest {
    // One number for the runner's limit and the workspace's TTL, so autostop always comes later.
    const maxDurationMs = spec.maxDurationMs ?? options.defaultMaxDurationMs ?? 2 * 3_600_000;
    const own: Record<WorkspaceParameter, string | number | boolean | undefined> = {
      task_type: spec.stage,
      issue_number: spec.number,
      gitea_url: spec.forgeUrl,
      // BATON_FORGE, which names the forge's own variables for the agent (GH_TOKEN, GITLAB_TOKEN);
      // not sent for Gitea, so a template from before it keeps working for Gitea runs.
      forge: spec.forge === 'github' || spec.forge === 'gitlab' ? spec.forge : undefined,
      gitea_org: spec.owner,
      gitea_repo: spec.repo,
      gitea_token: spec.forgeToken,
      claude_oauth_token: options.claudeOauthToken,
      repo_clone_url: spec.cloneUrl,
      callback_url: spec.callbackUrl,
      callback_token: spec.callbackToken,
      callback_token_hash: sendIdentity ? tokenHashOf(spec.callbackToken) : undefined,
      deploy_env: spec.deployEnv,
      run_id: spec.runId,
      // The runner's limits, as the local provider passes them (BATON_MAX_DURATION_MS,
      // BATON_TOKEN_CAP): the template hands them on to `baton agent`. No cap: not sent.
      max_duration_ms: maxDurationMs,
      token_cap: spec.tokenCap,
      stage_build: spec.build,
      // The stage table's settings the runner reads (BATON_SETUP_TOKENS,
      // BATON_STAGE_SKIP_PERMISSIONS), as the local provider passes them. Absent or empty: not
      // sent, and the template's empty default leaves the runner's own default.
      setup_tokens: spec.setupTokens?.length ? spec.setupTokens.join(',') : undefined,
      stage_skip_permissions: spec.skipPermissions,
      // A manual run's $ARGUMENTS and branch (BATON_ARGUMENTS, BATON_BRANCH); not sent when absent.
      stage_arguments: spec.arguments,
      git_ref: spec.ref,
      // A conversation's next turn (BATON_RESUME_*): the session, the reply and who wrote it.
      resume_session_id: spec.resume?.sessionId,
      resume_reply: spec.resume?.reply,
      resume_by: spec.resume?.by,
      // The stage's agent (BATON_AGENT, BATON_AGENT_MODEL, BATON_AGENT_COMMAND, BATON_AGENT_PRICE),
      // as the local provider passes them; not sent for Claude Code with its defaults, so a
      // template from before them keeps working for such runs.
      agent: spec.agent,
      agent_model: spec.agentModel,
      agent_command: spec.agentCommand ? JSON.stringify(spec.agentCommand) : undefined,
      agent_price: spec.agentPrice ? JSON.stringify(spec.agentPrice) : undefined,
      // Only this run's agent's key, under its own parameter (CODEX_API_KEY -> codex_api_key).
      ...agentKeys(spec),
    };
    const values = new Map<string, string>();
    for (const [key, value] of Object.entries(own)) if (value !== undefined) values.set(key, String(value));
    for (const [key, value] of Object.entries(options.extraParameters ?? {})) values.set(key, value);
    for (const [key, value] of Object.entries(spec.extra ?? {})) values.set(key, value);
    const richParameters: CoderRichParameter[] = [...values].map(([name, value]) => ({ name, value }));
    return {
      name: spec.name,
      // Coder refuses both at once; a pinned version names its template itself.
      ...(options.templateVersionId ? { template_version_id: options.templateVersionId } : { template_id: options.templateId }),
      ...(options.presetId ? { template_version_preset_id: options.presetId } : {}),
      rich_parameter_values: richParameters,
      ttl_ms: ttlForRun(maxDurationMs),
      automatic_updates: 'never',
    };
  }

  /**
   * Asks for a stop or delete build, tolerating Coder's one-build-at-a-time rule: on 409 it
   * re-reads the workspace (a retried POST may already have started the build) and tries again.
   * A delete blocked past `activeBuildWaitMs` (a build stuck in `stopping`) cancels that build.
   */
  async function requestTransition(initial: CoderWorkspace, transition: Exclude<CoderTransition, 'start'>): Promise<void> {
    let ws: CoderWorkspace | null = initial;
    let deadline = clock.now() + activeBuildWaitMs;
    let cancelled = false;
    while (ws) {
      if (alreadyHeading(ws, transition)) return;
      const answer = await client.createBuild(ws.id, { transition });
      // 201 in the code, 200 in the generated docs: any 2xx is the build; 404/410: gone.
      if (answer.status < 300 || answer.status === 404 || answer.status === 410) return;
      // 409: another build is active.
      if (clock.now() >= deadline) {
        if (transition === 'delete' && !cancelled) {
          cancelled = true;
          await client.cancelBuild(ws.latest_build.id);
          deadline = clock.now() + activeBuildWaitMs;
        } else {
          throw new CoderWaitTimeoutError(
            `Coder workspace "${ws.name}": a ${ws.latest_build.transition} build is still active (${ws.latest_build.status}) after ${activeBuildWaitMs} ms; cannot ${transition} it yet`,
          );
        }
      }
      await clock.sleep(pollMs);
      ws = await client.getWorkspace(ws.id);
    }
  }

  /** Polls until the workspace is deleted (410/404). */
  async function waitGone(id: string, name: string, timeoutMs: number): Promise<void> {
    const deadline = clock.now() + timeoutMs;
    for (;;) {
      const ws = await client.getWorkspace(id);
      if (!ws || ws.latest_build.status === 'deleted') return;
      if (ws.latest_build.status === 'failed' && ws.latest_build.transition === 'delete') {
        throw new CoderApiError(500, `delete build of "${name}"`, {
          message: `the delete build failed${ws.latest_build.job.error ? `: ${ws.latest_build.job.error}` : ''}`,
        });
      }
      if (clock.now() >= deadline) {
        throw new CoderWaitTimeoutError(`Coder workspace "${name}" still exists (${ws.latest_build.status}) after ${timeoutMs} ms`);
      }
      await clock.sleep(pollMs);
    }
  }

  type Decision = 'adopt' | 'recreate' | 'wait';

  async function decide(ws: CoderWorkspace, spec: WorkspaceSpec): Promise<Decision> {
    const { status, transition, job } = ws.latest_build;
    if (transition === 'delete') return status === 'failed' || status === 'canceled' ? 'recreate' : 'wait';
    if (ACTIVE_JOB.has(job.status) && transition === 'stop') return 'wait';
    if (status === 'canceling') return 'wait';
    if (status === 'stopped' || status === 'failed' || status === 'canceled') return 'recreate';
    // Running, or a start still building: adopted only when it is this run's (when it says whose it is).
    const identity = await identityOf(ws, spec);
    if (identity !== 'unknown') return identity === 'own' ? 'adopt' : 'recreate';
    const workspace = toWorkspace(ws);
    if (clock.now() - workspace.createdAt < staleAfterMs) return 'adopt';
    return (await options.isOwnedByLiveRun(ws.name, workspace)) ? 'adopt' : 'recreate';
  }

  async function create(spec: WorkspaceSpec): Promise<Workspace> {
    const problem = coderNameProblem(spec.name);
    if (problem) throw new PermanentError(`Coder workspace name ${JSON.stringify(spec.name)} is invalid: ${problem}`);
    const secrets = {
      gitea_token: spec.forgeToken,
      callback_token: spec.callbackToken,
      claude_oauth_token: options.claudeOauthToken,
      ...agentKeys(spec),
    };
    for (const [parameter, value] of Object.entries(secrets)) {
      // The template hands these to the runner as NAME=value lines of its secrets file, where a
      // line break would end the value early and could forge another line; its startup script
      // refuses them, so the run could never report. Refused here, naming only the parameter.
      if (value !== undefined && /[\r\n]/.test(value)) {
        throw new PermanentError(`Coder parameter ${parameter} must be a single line; the secret given for it has a line break`);
      }
    }
    const request = createRequest(spec, await templateDeclaresIdentity());
    const deadline = clock.now() + waitGoneMs;
    let lastState = 'none';
    for (let round = 0; round < MAX_CONFLICT_ROUNDS; round++) {
      const answer = await client.createWorkspace(user, request, Object.values(secrets));
      if (answer.status !== 409) {
        const ws = answer.body as CoderWorkspace;
        knownTemplateIds.add(ws.template_id);
        return toWorkspace(ws);
      }
      // 409: the name is taken for this owner (a workspace still deleting counts).
      let existing = await client.getWorkspaceByName(user, spec.name);
      if (existing && !isManaged(existing)) {
        throw new PermanentError(
          `Coder workspace name "${spec.name}" is taken by a workspace baton does not manage (template ${existing.template_name ?? existing.template_id}, owner ${existing.owner_name}); baton will not touch it`,
          { cause: new CoderApiError(409, 'POST /api/v2/users/{user}/workspaces', answer.body as CoderResponse) },
        );
      }
      while (existing && existing.latest_build.status !== 'deleted') {
        lastState = `${existing.latest_build.transition}/${existing.latest_build.status}`;
        const decision = await decide(existing, spec);
        if (decision === 'adopt') return toWorkspace(existing);
        if (decision === 'recreate') {
          await requestTransition(existing, 'delete');
          await waitGone(existing.id, spec.name, Math.max(pollMs, deadline - clock.now()));
          break;
        }
        if (clock.now() >= deadline) break;
        await clock.sleep(pollMs);
        existing = await client.getWorkspace(existing.id);
      }
      if (clock.now() >= deadline) break;
    }
    throw new CoderWaitTimeoutError(
      `Coder workspace name "${spec.name}" is still taken after waiting ${waitGoneMs} ms (last seen ${lastState})`,
    );
  }

  async function list(): Promise<Workspace[]> {
    const pageSize = 100;
    const seen = new Map<string, Workspace>();
    const owner = await resolveOwnerFilter();
    for (let offset = 0; ;) {
      const page = await client.listWorkspaces({ q: `owner:${owner}`, limit: pageSize, offset });
      for (const ws of page.workspaces) {
        if (!namePattern.test(ws.name) || !isManaged(ws) || ws.latest_build.status === 'deleted') continue;
        seen.set(ws.id, toWorkspace(ws));
      }
      offset += page.workspaces.length;
      if (page.workspaces.length === 0 || offset >= page.count) break;
    }
    return [...seen.values()];
  }

  return {
    name: 'coder',
    health: () => ({ ...health }),
    create,
    async get(name) {
      const ws = await lookup(name);
      return ws ? toWorkspace(ws) : null;
    },
    list,
    async stop(name) {
      const ws = await lookup(name);
      if (ws) await requestTransition(ws, 'stop');
    },
    async delete(name) {
      const ws = await lookup(name);
      if (ws) await requestTransition(ws, 'delete');
    },
    async waitUntilRunning(name, { timeoutMs = 15 * 60_000 } = {}) {
      const deadline = clock.now() + timeoutMs;
      for (;;) {
        const ws = await lookup(name);
        if (!ws) throw new CoderApiError(404, `wait for "${name}"`, { message: 'the workspace disappeared while starting' });
        const { status, job } = ws.latest_build;
        if (status === 'running') return toWorkspace(ws);
        if (status !== 'pending' && status !== 'starting') {
          throw new CoderApiError(500, `start build of "${name}"`, {
            message: `the workspace is ${status} instead of running${job.error ? `: ${job.error}` : ''}`,
          });
        }
        if (clock.now() >= deadline) {
          throw new CoderWaitTimeoutError(`Coder workspace "${name}" is still ${status} after ${timeoutMs} ms`);
        }
        await clock.sleep(pollMs);
      }
    },
    async close() {},
  };
}

/** True when the workspace is already where the transition would take it, or on its way. */
function alreadyHeading(ws: CoderWorkspace, transition: 'stop' | 'delete'): boolean {
  const { status, transition: current, job } = ws.latest_build;
  if (status === 'deleted' || (current === 'delete' && ACTIVE_JOB.has(job.status))) return true;
  if (transition === 'delete') return false;
  if (current === 'stop' && (ACTIVE_JOB.has(job.status) || status === 'stopped')) return true;
  return status === 'failed' || status === 'canceled' || status === 'canceling';
}
