import { branchNamesIssue, type Run } from '../runs/index.js';

/**
 * What a run may change through the gateway besides reading its repository. The push rules come
 * from its stage (`pipeline.stages.<name>.push`, resolved by the composition root); whatever they
 * say, the default branch, a protected branch and tags are refused before a rule is read.
 */
export interface RunRights {
  /** `issue`, `head`, or branch patterns with `*`. An empty list: no pushes. */
  push: readonly string[];
  /** May merge a pull request through the API (`POST /pulls/<n>/merge`). */
  merge: boolean;
}

/** What a run gets when the composition root names no rights: its issue's branches or its pull request's head. */
export const DEFAULT_RIGHTS: RunRights = { push: ['issue', 'head'], merge: false };

/**
 * Whether `branch` is one the run may push under `rules`. `issue`: a branch naming the run's
 * issue (a path segment `issue-<n>` or `issue-<n>-…`, what the outcome check looks for), for runs
 * on an issue; `head`: the head branch of the run's pull request (`headRef`, which the caller
 * asks the forge for when the payload lacks it); anything else a pattern where `*` matches any
 * run of characters, `/` included.
 */
export function branchAllowed(branch: string, rules: readonly string[], run: Pick<Run, 'number' | 'payload'>, headRef?: string): boolean {
  const onPull = run.payload.isPull === true;
  return rules.some((rule) => {
    if (rule === 'issue') return run.number !== null && !onPull && branchNamesIssue(branch, run.number);
    if (rule === 'head') return onPull && headRef !== undefined && headRef === branch;
    return patternOf(rule).test(branch);
  });
}

/** A description of the rules for a refusal: "branches naming issue #8 or release/*". */
export function describeRules(rules: readonly string[], run: Pick<Run, 'number' | 'payload'>, headRef?: string): string {
  if (rules.length === 0) return 'no branch (this stage pushes nothing)';
  const onPull = run.payload.isPull === true;
  const words = rules.flatMap((rule) => {
    if (rule === 'issue') return onPull || run.number === null ? [] : [`a branch naming issue #${run.number} (issue-${run.number}-…)`];
    if (rule === 'head') return onPull ? [headRef ? `the pull request's head ${headRef}` : "the pull request's head"] : [];
    return [rule];
  });
  return words.length ? words.join(' or ') : 'no branch for a run of this kind';
}

function patternOf(rule: string): RegExp {
  return new RegExp(`^${rule.split('*').map(escape).join('.*')}$`);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Who is asking, for a change's body: the run, its stage's rights, the bot account, and where. */
export interface ChangeContext {
  run: Pick<Run, 'owner' | 'repo' | 'number' | 'payload' | 'stage'>;
  rights: RunRights;
  account: 'dev' | 'review';
  /** The forge's dialect, by the run's forge. */
  forge: 'gitea' | 'github' | 'gitlab';
  /** The path under the repository (GitLab approves by path: `/merge_requests/<n>/approve`). */
  rest: string;
}

/**
 * The fields through which a change asks for more than its path says, per forge. Sources:
 * Gitea's EditPullRequestOption (`base`; `state` open | closed), CreatePullRequestOption (`head`
 * as `branch` or `owner:branch`), MergePullRequestForm (`force_merge`: past the branch's
 * protection), CreatePullReviewOptions (`event` APPROVED); GitHub's "Update a pull request"
 * (`base`, `state`), "Create a pull request" (`head` as `owner:branch`, `head_repo`), "Create a
 * review" (`event` APPROVE); GitLab's "Merge requests API": create (`source_branch`,
 * `target_project_id`: a merge request into another project), update (`target_branch`;
 * `state_event` close | reopen, and `merge` in API v3), "Merge request approvals API" (`approve`).
 */
const FIELDS = {
  gitea: { base: 'base', state: 'state', plainStates: ['open', 'closed'], head: 'head', elsewhere: [], force: ['force_merge'] },
  github: { base: 'base', state: 'state', plainStates: ['open', 'closed'], head: 'head', elsewhere: ['head_repo'], force: [] },
  gitlab: {
    base: 'target_branch',
    state: 'state_event',
    plainStates: ['close', 'reopen'],
    head: 'source_branch',
    elsewhere: ['target_project_id'],
    force: [],
  },
} as const;

/** The fields of GitLab's "Edit an issue" that only label it: all the review account may send there. */
const REVIEW_ISSUE_FIELDS: ReadonlySet<string> = new Set(['add_labels', 'remove_labels']);

/**
 * A write's JSON body, or null when it is not one. The forges also bind form-encoded bodies to
 * the same fields, which a JSON check would not see; the gateway reads JSON only and sends the
 * forge `application/json` (an empty body is `{}`).
 */
export function readChangeBody(bytes: Uint8Array | undefined): unknown {
  const text = bytes ? Buffer.from(bytes).toString('utf8').trim() : '';
  if (text === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/**
 * Why a write's query is refused, or null. GitLab reads a write's fields from its query string
 * as well as its body (`PUT …/merge_requests/3?target_branch=main`), so a body check alone would
 * be passed by; a change carries its fields in its body. The credential parameters are allowed:
 * they are taken out before the request goes on.
 */
export function writeQueryProblem(search: URLSearchParams): string | null {
  const extra = [...search.keys()].filter((key) => !/^((access_|private_|job_)?token)$/i.test(key));
  return extra.length ? `a change carries its fields in its JSON body, not in the query (${extra.join(', ').slice(0, 120)})` : null;
}

/**
 * What a change's body asks for beyond what the path allows and the stage may do, or null.
 * The path says "edit pull request 3"; the body can retarget it (its base: the default branch as
 * its new target, past the review its old target had), merge it through a state change, open one
 * from a branch the stage may not push or from another repository (which the pipeline's later
 * stages would treat as the bot's own work), force a merge past the branch's protection, or
 * approve as the dev account (whose approval counts towards a protected branch's required ones).
 */
export function changeProblem(change: string, body: unknown, context: ChangeContext): string | null {
  if (body === null) return 'the gateway passes a JSON body of a change, nothing else (no form)';
  const checked = ['pull-edit', 'issue-edit', 'pull-create', 'merge', 'review'].includes(change);
  if (typeof body !== 'object' || Array.isArray(body)) return checked ? `the body of a ${change} must be a JSON object` : null;
  const { run, rights } = context;
  if (context.forge === 'gitlab') {
    const quick = quickActionProblem(body as Record<string, unknown>);
    if (quick) return quick;
  }
  if (change === 'issue-edit' && context.account === 'review') {
    const other = Object.keys(body as object).filter((key) => !REVIEW_ISSUE_FIELDS.has(key.toLowerCase()));
    if (context.forge !== 'gitlab' || other.length > 0)
      return `the review account edits an issue only for its labels (${[...REVIEW_ISSUE_FIELDS].join(', ')} on GitLab)`;
  }
  const fields = FIELDS[context.forge];
  const values = (name: string) => valuesOf(body as Record<string, unknown>, name);
  const needsMerge = (what: string) =>
    `${what} needs the right to merge, which the ${run.stage} stage has not (pipeline.stages.${run.stage}.merge)`;
  if (change === 'pull-edit' && !rights.merge && values(fields.base).some((v) => v !== '' && v !== null))
    return needsMerge("changing a pull request's base branch");
  const plain = (v: unknown) =>
    v === null || (typeof v === 'string' && (fields.plainStates as readonly string[]).includes(v.trim().toLowerCase()));
  const state = values(fields.state).find((v) => !plain(v));
  if ((change === 'pull-edit' || change === 'issue-edit') && !rights.merge && state !== undefined)
    return needsMerge(`a state change to ${JSON.stringify(state).slice(0, 40)} (only ${fields.plainStates.join(' or ')})`);
  if (change === 'pull-create') return headProblem(values(fields.head), fields.elsewhere.flatMap(values), context);
  if (change === 'merge' && fields.force.flatMap(values).some((v) => v !== false && v !== null))
    return "a merge past the branch's protection (force_merge) is not made through the gateway";
  const approving = values('event').some((v) => typeof v === 'string' && /^approve/i.test(v.trim())) || /\/approve$/.test(context.rest);
  if (change === 'review' && context.account === 'dev' && approving)
    return 'only the review account approves pull requests; the dev account may comment or request changes';
  return null;
}

/**
 * Why a change of the caller's own reviewer state on pull request `target` may not pass, or null.
 * On GitLab that is "Request changes" (`POST …/merge_requests/:iid/draft_notes/bulk_publish` with
 * `reviewer_state`: gitlab-org/gitlab lib/api/draft_notes.rb), which starts rework: only the
 * review account sets it, and only on the run's own merge request: the run's, or for a run on an
 * issue one whose source branch (`targetHead`, read from the forge) names the issue.
 */
export function reviewerStateProblem(
  target: number,
  context: Pick<ChangeContext, 'run' | 'account'>,
  targetHead: string | undefined,
): string | null {
  const { run } = context;
  if (context.account !== 'review')
    return 'only the review account sets its reviewer state (requests changes) on a merge request; the dev account may not';
  if (run.payload.isPull === true) {
    if (target === run.number) return null;
    return `a reviewer state on !${target}: this run may request changes on its own merge request !${run.number ?? '?'} only`;
  }
  if (run.number !== null && targetHead !== undefined && branchNamesIssue(targetHead, run.number)) return null;
  return `a reviewer state on !${target}: this run may request changes only on a merge request whose source branch names issue #${run.number ?? '?'}`;
}

/**
 * The text fields in which GitLab runs quick actions: a note's or a discussion's `body`, a draft
 * note's and a published review's `note`, an issue's or a merge request's `description`.
 */
const GITLAB_TEXT_FIELDS = ['body', 'note', 'description'] as const;

/**
 * GitLab runs the quick actions of a text it is sent (`/merge`, `/approve`, `/target_branch main`,
 * `/submit_review requested_changes`, `/move other/project`, …: a line of `/<name>` with its
 * argument; gitlab-org/gitlab lib/gitlab/quick_actions/extractor.rb, run by Notes::CreateService
 * through the Notes API, which answers 202 when the body held nothing else), as the bot and
 * past every check here: a merge without the stage's right, an approval by the dev account. So a
 * text with a line that could be one is refused, whatever the command (inside a code block too:
 * wider than GitLab, never narrower).
 */
function quickActionProblem(body: Record<string, unknown>): string | null {
  for (const field of GITLAB_TEXT_FIELDS) {
    for (const value of valuesOf(body, field)) {
      if (typeof value !== 'string') continue;
      const line = /^\/[a-z_][a-z0-9_]*(?=[ \t]|$)/im.exec(value);
      if (line)
        return `a ${field} with a line starting ${JSON.stringify(line[0].slice(0, 40))}, which GitLab runs as a quick action; indent the line or put it in backticks`;
    }
  }
  return null;
}

/** A pull request's head must be a branch of the run's repository that the stage may push. */
function headProblem(heads: unknown[], elsewhere: unknown[], context: ChangeContext): string | null {
  const { run, rights } = context;
  if (elsewhere.some((r) => r !== null && (typeof r !== 'string' || r.toLowerCase() !== run.repo.toLowerCase())))
    return `a pull request from or into another repository; only within ${run.owner}/${run.repo}`;
  if (heads.length === 0) return null; // the forge refuses a pull request without a head
  for (const head of heads) {
    if (typeof head !== 'string') return 'a pull request whose head is not a branch name';
    const colon = context.forge === 'gitlab' ? -1 : head.indexOf(':');
    if (colon >= 0 && head.slice(0, colon).toLowerCase() !== run.owner.toLowerCase())
      return `a pull request from ${head.slice(0, 160)}: another owner's branch; only branches of ${run.owner}/${run.repo}`;
    const branch = head.slice(colon + 1);
    const headRef = typeof run.payload.headRef === 'string' ? run.payload.headRef : undefined;
    if (!branchAllowed(branch, rights.push, run, headRef))
      return `a pull request from ${branch.slice(0, 160)}: the ${run.stage} stage opens pull requests only from ${describeRules(rights.push, run, headRef)} (pipeline.stages.${run.stage}.push)`;
  }
  return null;
}

/**
 * Every value the forge could read as field `name`. Gitea's Go decoder matches names without
 * case (Unicode simple folding: `Base`, `BASE`, `baſe`), and the last duplicate wins there; so
 * all of them are looked at, folded wider than Go does (upper, then lower case), never narrower.
 */
function valuesOf(body: Record<string, unknown>, name: string): unknown[] {
  return Object.entries(body).flatMap(([key, value]) => (key.toUpperCase().toLowerCase() === name ? [value] : []));
}

/**
 * Reads under the run's repository that reach past it: secrets and variables of its CI (values,
 * or a runner's registration token, which gets the repository's jobs and their secrets), its
 * webhooks and deploy keys, and an issue's dependencies (issues of other repositories). The
 * capability is for the repository's code, issues and pull requests; these are the bot's rights
 * as the repository's administrator.
 */
const READS_REFUSED: readonly [RegExp, string][] = [
  [/^\/hooks(\/|$)/i, "the repository's webhooks"],
  [/^\/keys(\/|$)/i, "the repository's deploy keys"],
  [/^\/(actions|dependabot|codespaces|environments\/[^/]+)\/(secrets|variables)(\/|$)/i, "the repository's CI secrets and variables"],
  [/^\/actions\/runners(\/|$)/i, "the repository's CI runners and their registration token"],
  [/^\/issues\/\d+\/(dependencies|blocks)(\/|$)/i, "an issue's dependencies (issues of other repositories)"],
];

/** Why a read of `rest` (the path after the run's repository) is refused, or null. */
export function readProblem(rest: string): string | null {
  const refused = READS_REFUSED.find(([pattern]) => pattern.test(rest));
  return refused ? `${refused[1]} are not read through the gateway` : null;
}

/**
 * Whether the bot may edit or delete a comment: only one it wrote. The bot may touch anyone's as
 * the repository's administrator, and others' words are theirs (an approval, an objection, a
 * maintainer's instruction the next stage reads). `comment` is the forge's JSON of the comment
 * (Gitea's and GitHub's `user.login`, GitLab's note `author.username`), `self` the bot's own
 * (`/user`: `login`, GitLab's `username`).
 */
export function commentEditProblem(comment: unknown, self: unknown): string | null {
  const author = nameOf((comment as { user?: unknown; author?: unknown } | null)?.user ?? (comment as { author?: unknown } | null)?.author);
  const bot = nameOf(self);
  if (author === undefined || bot === undefined) return 'the forge did not say who wrote this comment';
  if (author.toLowerCase() === bot.toLowerCase()) return null;
  return `a change to a comment by ${author.slice(0, 80)}: the bot edits and deletes only its own comments`;
}

function nameOf(user: unknown): string | undefined {
  const { login, username } = (user ?? {}) as { login?: unknown; username?: unknown };
  const name = typeof login === 'string' ? login : username;
  return typeof name === 'string' && name !== '' ? name : undefined;
}
