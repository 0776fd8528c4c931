import type { Run } from '../runs/index.js';

/**
 * What the gateway must know of one forge to guard it: how a path names the run's repository, what
 * change an API write is, how the bot's token is presented upstream, and where the facts a push
 * check needs (the default branch, a branch's protection, a pull request's head) are read. The
 * rules themselves (who may change what, which branches a stage may push) are the gateway's, the
 * same on every forge; a dialect only translates.
 */
export interface ForgeDialect {
  /** For messages: `Gitea`, `GitHub`, `GitLab`. */
  readonly name: string;
  /** The variable the run's capability is in, for the 401 message. */
  readonly credentialVariable: string;
  /** What a path under the gateway is, for this run. */
  targetOf(path: string, service: string | undefined, run: Run): Target | null;
  /** The change an API write under the repository makes (`rest` is the path after the repository), or null: not one runs may make. */
  changeOf(method: string, rest: string): ApiChange | null;
  /** Where a target's request goes once the capability is swapped. */
  upstreamUrl(path: string, target: Target): string;
  /** The upstream API base, replaced by the gateway's in `Link` headers so a next page comes back here. */
  readonly apiBase: string;
  /** The gateway's own path of that base (`/api/v3`). */
  readonly apiPrefix: string;
  /** Headers that carry the bot's token to the API. */
  apiAuth(token: string): Record<string, string>;
  /** `Authorization` of a git request carrying the bot's token, as the forge's git over HTTP takes it. */
  gitAuth(token: string): string;
  /** The repository's own API URL (its JSON has `default_branch`). */
  repositoryUrl(run: Run): string;
  /** A branch's API URL (its JSON has `protected`). */
  branchUrl(run: Run, branch: string): string;
  /** A pull (merge) request's API URL, and where its head branch is in the answer. */
  pullUrl(run: Run, number: number): string;
  headRefOf(pull: unknown): string | undefined;
  /**
   * The pull request whose reviewer state for the caller a write sets (GitLab's "Request
   * changes"), or null: not one. Forges whose verdict is a review object have none.
   */
  reviewerStateOf?(method: string, rest: string, body: unknown): number | null;
  /** Why a release request may not pass (null: it may), given its JSON body. */
  releaseProblem(body: unknown): string | null;
}

/** A path the gateway serves: a global read, the run's repository through the API or git, or one refused with its reason. */
export type Target =
  | { kind: 'global' }
  /** `byId`: the repository named by its numeric id (GitHub's `/repositories/{id}`, GitLab's `/projects/{id}`), checked against the run's. */
  | { kind: 'api'; rest: string; byId?: string }
  | { kind: 'git'; service: 'info' | 'upload' | 'receive' }
  | { kind: 'refused'; reason: string };

/**
 * The changes runs may make through a forge's API, named alike on every forge: the work the stage
 * prompts do. The review account makes only `comment` and `review`; `merge` needs the stage's
 * `merge` right; `release` passes only as a draft where the forge has drafts.
 */
export type ApiChange =
  | 'issue-create'
  | 'issue-edit'
  | 'comment'
  | 'comment-edit'
  | 'label'
  | 'reaction'
  | 'pull-create'
  | 'pull-edit'
  | 'review'
  | 'reviewers'
  | 'merge'
  | 'release';

/**
 * The changes the review account may make: comments, reviews and labels (the tester marks an
 * issue `ready-for-deployment`). GitLab labels an issue by editing it (`add_labels`), so an
 * issue edit is among them, kept to its label fields for this account (rights.ts).
 */
export const REVIEW_CHANGES: ReadonlySet<ApiChange> = new Set(['comment', 'review', 'label', 'issue-edit']);

/** A table of `[method, path under the repository, change]`, read first match wins. */
export type ChangeTable = readonly (readonly [RegExp, RegExp, ApiChange])[];

export function changeIn(table: ChangeTable, method: string, rest: string): ApiChange | null {
  return table.find(([m, p]) => m.test(method) && p.test(rest))?.[2] ?? null;
}

/** Whether `owner`/`repo` (as decoded from a path) name the run's repository (forges compare names without case). */
export function isRunRepository(run: Pick<Run, 'owner' | 'repo'>, owner: string, repo: string): boolean {
  return owner.toLowerCase() === run.owner.toLowerCase() && repo.toLowerCase() === run.repo.toLowerCase();
}

/** A path segment decoded, or null when it does not decode. */
export function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * Git's smart HTTP under `/<owner>/<repo>[.git]/…`, the layout of Gitea and GitHub (GitLab's
 * namespaces may be deeper: gitlab.ts): the ref advertisement of either service, an upload
 * (fetch) or a receive (push).
 */
export function gitTargetOf(path: string, service: string | undefined, run: Run): Target | null {
  const git = /^\/([^/]+)\/([^/]+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(path);
  if (!git || !isRunRepository(run, git[1]!, git[2]!)) return null;
  return gitServiceOf(git[3]!, service);
}

/** The git target of a smart-HTTP path's last part (`info/refs` with its `service`, or a service's POST). */
export function gitServiceOf(rest: string, service: string | undefined): Target | null {
  if (rest === 'info/refs')
    return service === 'git-upload-pack' || service === 'git-receive-pack' ? { kind: 'git', service: 'info' } : null;
  return { kind: 'git', service: rest === 'git-upload-pack' ? 'upload' : 'receive' };
}

/** Basic credentials as a header value. */
export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** Whether a release body asks for a draft. */
export function isDraftRelease(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { draft?: unknown }).draft === true;
}
