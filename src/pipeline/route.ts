import type { RunPayload, TaskRequest } from '../runs/index.js';
import { DEFAULT_SKIP_PERMISSIONS, DEPLOY_ENV_PATTERN } from './stages.js';
import type { ForgeEvent, ForgeEventKind, Pipeline, RouteContext, RouteResult, StageDefinition, Trigger, TriggerEvent } from './types.js';

/** Reasons for ignoring an event. Short and stable: they are shown to people and asserted by tests. */
export const IGNORE_REASON = {
  botSender: 'bot sender',
  ignoredUser: 'ignored user',
  closedIssue: 'closed issue',
  closedPull: 'closed pull request',
  mergedPull: 'merged pull request',
  noTrigger: 'no trigger matches',
  deployEnvRefused: 'deploy label names an environment that is not allowed',
} as const;

/**
 * Event kinds whose rules ask which labels are newly present; only these need `previousLabels`,
 * and only these should update the caller's memory of labels seen.
 */
export const LABEL_COMPARING_KINDS: readonly ForgeEventKind[] = ['issue_opened', 'pr_opened', 'issue_labels', 'pr_labels'];

/** One thing that happened, in trigger terms. A label event yields one per newly present label. */
interface Occurrence {
  event: TriggerEvent;
  label?: string;
}

/**
 * Decides which stages an event starts. Pure: everything it needs is in its arguments.
 *
 * Rules, in order: senders that are bot accounts or ignored users never trigger (unless a trigger
 * opts in with `allowBots`); nothing on a closed issue or a closed/merged PR triggers; then every
 * stage whose trigger matches yields one TaskRequest (a stage at most once).
 */
export function route(event: ForgeEvent, pipeline: Pipeline, context: RouteContext): RouteResult {
  const sender = event.sender.toLowerCase();
  const commentAuthor = event.comment?.author.toLowerCase();
  const fromBot = pipeline.botUsers.includes(sender) || (commentAuthor !== undefined && pipeline.botUsers.includes(commentAuthor));
  const botTriggersExist = pipeline.stages.some((s) => s.triggers.some((t) => t.allowBots));
  if (fromBot && !botTriggersExist) return { ignored: IGNORE_REASON.botSender };
  if (pipeline.ignoreUsers.includes(sender)) return { ignored: IGNORE_REASON.ignoredUser };
  if (event.state === 'closed') {
    if (!event.isPull) return { ignored: IGNORE_REASON.closedIssue };
    return { ignored: event.merged ? IGNORE_REASON.mergedPull : IGNORE_REASON.closedPull };
  }

  const occurrences = occurrencesOf(event, context);
  const requests: TaskRequest[] = [];
  let blockedByBot = false;
  let deployRefused = false;
  for (const stage of pipeline.stages) {
    for (const occurrence of occurrences) {
      const trigger = stage.triggers.find((t) => matches(t, occurrence, event, stage, pipeline));
      if (!trigger) continue;
      if (fromBot && !trigger.allowBots) {
        blockedByBot = true;
        continue;
      }
      const request = requestFor(stage, occurrence, event, pipeline);
      if (request) requests.push(request);
      else deployRefused = true;
      break;
    }
  }
  if (requests.length === 0) {
    if (deployRefused) return { ignored: IGNORE_REASON.deployEnvRefused };
    return { ignored: blockedByBot || fromBot ? IGNORE_REASON.botSender : IGNORE_REASON.noTrigger };
  }
  return requests;
}

/** Labels present now that were not present the last time baton looked (case-insensitive). */
export function newlyPresentLabels(labels: readonly string[], previous: readonly string[] | null): string[] {
  if (previous === null) return [...labels];
  const before = new Set(previous.map((l) => l.toLowerCase()));
  return labels.filter((l) => !before.has(l.toLowerCase()));
}

function occurrencesOf(event: ForgeEvent, context: RouteContext): Occurrence[] {
  const added = (): Occurrence[] => newlyPresentLabels(event.labels, context.previousLabels).map((label) => ({ event: 'labeled', label }));
  switch (event.kind) {
    case 'issue_opened':
      return [{ event: 'issue_opened' }, ...added()];
    case 'pr_opened':
      return [{ event: 'pr_opened' }, ...added()];
    case 'issue_labels':
    case 'pr_labels':
      return added();
    case 'issue_comment':
      return event.action === 'created' || event.action === 'edited' ? [{ event: 'comment' }] : [];
    case 'pr_comment':
      return event.action === 'created' || event.action === 'edited' ? [{ event: 'pr_comment' }] : [];
    case 'pr_synchronized':
      return [{ event: 'pr_synchronized' }];
    case 'review':
      if (!event.review) return [];
      return [{ event: `review_${event.review.state}` }];
    case 'release':
      return event.action === 'published' ? [{ event: 'release_published' }] : [];
    case 'push':
      return [{ event: 'push' }];
    default:
      return [];
  }
}

function matches(trigger: Trigger, occurrence: Occurrence, event: ForgeEvent, stage: StageDefinition, pipeline: Pipeline): boolean {
  if (trigger.event !== occurrence.event) return false;
  if (trigger.event === 'labeled') {
    if (!trigger.label || !occurrence.label || !sameLabel(trigger.label, occurrence.label)) return false;
  } else if (trigger.label && !hasLabel(event.labels, trigger.label)) {
    return false;
  }
  if (trigger.withoutLabels?.some((l) => hasLabel(event.labels, l))) return false;
  if (trigger.inAnalysis && !inAnalysis(event, stage, pipeline)) return false;
  return true;
}

/** Open issue (not PR) carrying none of the labels that any other stage's triggers name. */
function inAnalysis(event: ForgeEvent, stage: StageDefinition, pipeline: Pipeline): boolean {
  if (event.isPull || event.state === 'closed') return false;
  const later = pipeline.stages
    .filter((s) => s.name !== stage.name)
    .flatMap((s) => s.triggers.map((t) => t.label))
    .filter((l): l is string => typeof l === 'string');
  return !later.some((l) => hasLabel(event.labels, l));
}

/** The run a matched trigger asks for; null when a deploying stage's label names a refused environment. */
function requestFor(stage: StageDefinition, occurrence: Occurrence, event: ForgeEvent, pipeline: Pipeline): TaskRequest | null {
  const payload: RunPayload = {
    account: stage.account,
    accountUser: pipeline.accounts[stage.account],
    build: stage.build,
    ...(stage.setupTokens?.length ? { setupTokens: stage.setupTokens } : {}),
    skipPermissions: stage.skipPermissions ?? DEFAULT_SKIP_PERMISSIONS,
    trigger: describe(occurrence, event),
    sender: event.sender,
    event: event.kind,
    isPull: event.isPull,
  };
  if (event.htmlUrl) payload.htmlUrl = event.htmlUrl;
  if (event.title !== undefined) payload.title = event.title;
  if (event.headRef) payload.headRef = event.headRef;
  // The head when the run was asked for: a push of the run is a head that moved (outcome check).
  if (event.headSha) payload.headSha = event.headSha;
  if (event.comment?.id !== undefined) payload.commentId = event.comment.id;
  if (event.review) payload.review = event.review.state;
  if (stage.deploys) {
    const deployEnv = deployEnvOf(event.labels, pipeline);
    if (deployEnv === null) return null;
    payload.deployEnv = deployEnv;
  }
  const request: TaskRequest = { stage: stage.name, owner: event.owner, repo: event.repo, payload, onDuplicate: stage.onDuplicate };
  if (event.number !== undefined) request.number = event.number;
  // GitHub's and GitLab's runs name their forge in the key; Gitea's keep the key they always had.
  if (event.forge === 'github' || event.forge === 'gitlab') {
    request.forge = event.forge;
    if (event.forge === 'gitlab' && event.isPull) request.mergeRequest = true;
  }
  return request;
}

/**
 * `deploy:production` → `production`; the first such label wins, else the configured default.
 * The label is chosen by whoever may label the issue, and its name reaches the devops prompt: it
 * counts only when it is one of `deploy.environments` (as spelled there), or, without that list,
 * when it has the strict form DEPLOY_ENV_PATTERN. null when the label names anything else.
 */
export function deployEnvOf(labels: readonly string[], pipeline: Pipeline): string | null {
  const prefix = pipeline.deploy.labelPrefix.toLowerCase();
  for (const label of labels) {
    if (label.toLowerCase().startsWith(prefix)) {
      const env = label.slice(prefix.length).trim();
      if (!env) continue;
      const allowed = pipeline.deploy.environments;
      if (allowed.length > 0) return allowed.find((e) => e.toLowerCase() === env.toLowerCase()) ?? null;
      return DEPLOY_ENV_PATTERN.test(env) ? env : null;
    }
  }
  return pipeline.deploy.defaultEnv;
}

function describe(occurrence: Occurrence, event: ForgeEvent): string {
  const by = `by ${event.sender}`;
  const ref = event.number !== undefined ? ` #${event.number}` : '';
  switch (occurrence.event) {
    case 'issue_opened':
      return `issue${ref} opened ${by}`;
    case 'labeled':
      return `label "${occurrence.label}" added ${by}`;
    case 'comment':
    case 'pr_comment':
      return `comment ${event.action === 'edited' ? 'edited' : 'added'} ${by}`;
    case 'pr_opened':
      return `pull request${ref} opened ${by}`;
    case 'pr_synchronized':
      return `new commits on pull request${ref} ${by}`;
    case 'review_approved':
      return `review approved ${by}`;
    case 'review_rejected':
      return `changes requested ${by}`;
    case 'review_comment':
      return `review comment ${by}`;
    case 'release_published':
      return `release ${event.ref ?? ''} published ${by}`.replace('  ', ' ');
    case 'push':
      return `push to ${event.ref ?? 'a branch'} ${by}`;
    case 'cron':
      return 'schedule';
  }
}

function sameLabel(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function hasLabel(labels: readonly string[], label: string): boolean {
  return labels.some((l) => sameLabel(l, label));
}
