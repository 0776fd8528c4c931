import { PermanentError } from '../background/index.js';

/**
 * The port every workspace backend implements (coder, local, and the in-memory one for tests).
 * A workspace is named after its run and is idempotent by that name: creating a name that exists
 * returns the existing workspace instead of making a second one.
 */
export const WORKSPACE_STATUS = {
  pending: 'pending',
  starting: 'starting',
  running: 'running',
  stopping: 'stopping',
  stopped: 'stopped',
  failed: 'failed',
  canceled: 'canceled',
  deleting: 'deleting',
  deleted: 'deleted',
} as const;

export type WorkspaceStatus = (typeof WORKSPACE_STATUS)[keyof typeof WORKSPACE_STATUS];

export interface Workspace {
  /** Provider's own id (Coder UUID, local directory name, …). */
  id: string;
  name: string;
  status: WorkspaceStatus;
  /** Epoch ms. */
  createdAt: number;
}

/** Everything a workspace needs to run one stage; sent as template parameters or env. */
export interface WorkspaceSpec {
  name: string;
  runId: number;
  stage: string;
  owner: string;
  repo: string;
  /** Issue or PR number; absent for repository-wide stages such as maintenance. */
  number?: number;
  cloneUrl?: string;
  /**
   * A local repository declared in baton.yaml (an absolute path, also the `cloneUrl`): local
   * workspaces let the run read it, and only it, at the same path.
   */
  repositoryPath?: string;
  /** What `$ARGUMENTS` in the stage's prompt stands for (`BATON_ARGUMENTS`); the number when absent. */
  arguments?: string;
  /** The branch the runner works on (`BATON_BRANCH`); the runner's default (`develop`) when absent. */
  ref?: string;
  deployEnv?: string;
  /** `heavy` stages build the code before the agent starts; from the pipeline's stage table. */
  build?: 'light' | 'heavy';
  /** Tokens the install and build commands get (`forge`, `agent`); none unless the stage table grants them. */
  setupTokens?: readonly ('forge' | 'agent')[];
  /** The stage's `skipPermissions` from the pipeline's stage table; absent = the runner's default (true). */
  skipPermissions?: boolean;
  /** The stage's agent (`BATON_AGENT`) and model (`BATON_AGENT_MODEL`); absent = the runner's default (claude, the CLI's model). */
  agent?: string;
  agentModel?: string;
  /** The agent's argv prefix from `agents.<agent>.command`. */
  agentCommand?: readonly string[];
  /** The agent's own credential as the runner secret its adapter names; only this run's agent's. */
  agentSecret?: { name: string; value: string };
  /** What its tokens cost when its CLI reports no cost (`BATON_AGENT_PRICE`, USD per million tokens). */
  agentPrice?: { input: number; cachedInput?: number; output: number; cacheWrite?: number };
  /** Forge token of the stage's bot account: the only forge credential the workspace gets. */
  forgeToken?: string;
  /** The forge the repository is on: `gitea`, `forgejo`, `github`, `gitlab`. @default 'gitea' */
  forge?: string;
  /** The forge's root URL (GITEA_URL, GITHUB_URL, …). */
  forgeUrl?: string;
  /** Full URL of the completion callback for this run. */
  callbackUrl: string;
  /** Per-run secret the workspace presents on its callback; only its hash is stored. */
  callbackToken: string;
  /**
   * SHA-256 (hex) of the callback tokens of this run's earlier attempts: a workspace of this name
   * is adopted only when its runner was started with this token or one of these, so a run never
   * takes over the workspace of another run that had its name (a database restored from a backup
   * numbers runs again). Undefined: any workspace of the name is adopted.
   */
  adoptableTokenHashes?: readonly string[];
  /** Longest the run may take (the runner's `BATON_MAX_DURATION_MS`); providers with autostop must outlast it. */
  maxDurationMs?: number;
  /**
   * Most tokens the agent may use before the runner stops it (`BATON_TOKEN_CAP`). Undefined: no
   * cap is sent and the runner's own default (none) applies.
   */
  tokenCap?: number;
  /** A conversation's next turn: the agent session a reply resumes (`BATON_RESUME_*`). */
  resume?: { sessionId: string; reply: string; by: string };
  /** Extra provider parameters from configuration. */
  extra?: Record<string, string>;
}

export interface WorkspaceProvider {
  readonly name: string;
  /** Creates the workspace, or adopts the existing one of that name. */
  create(spec: WorkspaceSpec): Promise<Workspace>;
  /** null when no such workspace exists (or it is deleted). */
  get(name: string): Promise<Workspace | null>;
  /** Workspaces this provider manages for baton (never anybody else's). */
  list(): Promise<Workspace[]>;
  /** Asks the workspace to stop; returns without waiting. Stopping a stopped one is a no-op. */
  stop(name: string): Promise<void>;
  /** Asks for deletion; returns without waiting. Deleting a missing one is a no-op. */
  delete(name: string): Promise<void>;
  /**
   * Whether the provider can work right now, for `/ready`: false with a reason naming the provider
   * after a failure retrying cannot fix (Coder rejected the token). Absent = always healthy.
   */
  health?(): { ok: boolean; reason?: string };
  /**
   * Resolves once a created workspace is up, or throws when its start failed. Providers whose
   * create returns before the workspace runs (Coder queues a build) implement it, so a failed
   * start fails the attempt at once instead of at the next sweep.
   */
  waitUntilRunning?(name: string): Promise<Workspace>;
  /** Releases timers and connections. */
  close?(): Promise<void>;
}

/**
 * errno codes of a resource that runs out for a while (disk space, quota, descriptors, processes,
 * memory) or a filesystem remounted read-only: the attempt fails, but the run waits and tries
 * again instead of counting it against its attempts. (Node.js sets `code` on fs and
 * child_process errors; providers keep them as the `cause` of their own errors.)
 */
const TRANSIENT_CODES = new Set(['ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE', 'EAGAIN', 'ENOMEM', 'EROFS', 'EBUSY']);

/** The transient errno code in `error` or its causes (e.g. `ENOSPC`), or null. */
export function transientErrorCode(error: unknown): string | null {
  const seen = new Set<unknown>();
  for (let e = error; e && typeof e === 'object' && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    if (e instanceof PermanentError) return null;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSIENT_CODES.has(code)) return code;
  }
  return null;
}
