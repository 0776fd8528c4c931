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

/** Who is asking, for a change's body: the run, its stage's rights and the bot account it acts as. */
export interface ChangeContext {
  run: Pick<Run, 'owner' | 'repo' | 'number' | 'payload' | 'stage'>;
  rights: RunRights;
  account: 'dev' | 'review';
}

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
 * What a change's body asks for beyond what the path allows and the stage may do, or null.
 * The path says "edit pull request 3"; the body can retarget it (`base`: the default branch as
 * its new target, past the review its old target had), open one from a branch the stage may not
 * push or another repository's (which the pipeline's later stages would treat as the bot's own
 * work), force a merge past the branch's protection, or approve as the dev account (whose
 * approval counts towards a protected branch's required approvals). Sources: Gitea's
 * EditPullRequestOption (`base`, `state` open | closed), CreatePullRequestOption (`head` as
 * `branch` or `owner:branch`), MergePullRequestForm (`force_merge`), CreatePullReviewOptions
 * (`event` APPROVED); GitHub's "Update a pull request" (`base`, `state`), "Create a pull
 * request" (`head`, `head_repo`), "Create a review" (`event` APPROVE).
 */
export function changeProblem(change: string, body: unknown, context: ChangeContext): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return 'the gateway passes a JSON object as the body of a change, nothing else';
  const { run, rights } = context;
  const values = (name: string) => valuesOf(body as Record<string, unknown>, name);
  const needsMerge = (what: string) =>
    `${what} needs the right to merge, which the ${run.stage} stage has not (pipeline.stages.${run.stage}.merge)`;
  if (change === 'pull-edit' && !rights.merge && values('base').some((v) => v !== '' && v !== null))
    return needsMerge("changing a pull request's base branch");
  const state = values('state').find((v) => !isPlainState(v));
  if ((change === 'pull-edit' || change === 'issue-edit') && !rights.merge && state !== undefined)
    return needsMerge(`a state change to ${JSON.stringify(state).slice(0, 40)} (only open or closed)`);
  if (change === 'pull-create') return headProblem(values('head'), values('head_repo'), context);
  if (change === 'merge' && values('force_merge').some((v) => v !== false && v !== null && v !== undefined))
    return "a merge past the branch's protection (force_merge) is not made through the gateway";
  if (change === 'review' && context.account === 'dev' && values('event').some((v) => typeof v === 'string' && /^approve/i.test(v.trim())))
    return 'only the review account approves pull requests; the dev account may comment or request changes';
  return null;
}

/** A pull request's head must be a branch of the run's repository that the stage may push. */
function headProblem(heads: unknown[], headRepos: unknown[], context: ChangeContext): string | null {
  const { run, rights } = context;
  if (headRepos.some((r) => r !== null && (typeof r !== 'string' || r.toLowerCase() !== run.repo.toLowerCase())))
    return `a pull request from another repository (head_repo); only from ${run.owner}/${run.repo}`;
  if (heads.length === 0) return null; // the forge refuses a pull request without a head
  for (const head of heads) {
    if (typeof head !== 'string') return 'a pull request whose head is not a branch name';
    const colon = head.indexOf(':');
    if (colon >= 0 && head.slice(0, colon).toLowerCase() !== run.owner.toLowerCase())
      return `a pull request from ${head.slice(0, 160)}: another owner's branch; only branches of ${run.owner}/${run.repo}`;
    const branch = head.slice(colon + 1);
    const headRef = typeof run.payload.headRef === 'string' ? run.payload.headRef : undefined;
    if (!branchAllowed(branch, rights.push, run, headRef))
      return `a pull request from ${branch.slice(0, 160)}: the ${run.stage} stage opens pull requests only from ${describeRules(rights.push, run, headRef)} (pipeline.stages.${run.stage}.push)`;
  }
  return null;
}

function isPlainState(value: unknown): boolean {
  return value === null || (typeof value === 'string' && ['open', 'closed'].includes(value.trim().toLowerCase()));
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
