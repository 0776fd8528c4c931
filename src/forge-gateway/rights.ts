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
