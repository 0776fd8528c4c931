import type { AgentName } from '../agents/index.js';
import type { SetupToken } from '../runner-contract/index.js';
import type { ForgeName, TaskRequest } from '../runs/index.js';

/**
 * What happened on the forge, reduced to the facts the pipeline rules need. Built by an ingress
 * (one per forge) from a verified webhook; the pipeline never sees raw payloads.
 *
 * Kinds, and the Gitea deliveries they come from (X-Gitea-Event-Type / action):
 * - `issue_opened` / `issue_edited` / `issue_closed` / `issue_reopened`: `issues` opened|edited|closed|reopened
 * - `issue_labels`: `issue_label` label_updated|label_cleared (no diff: compare with the labels last seen)
 * - `issue_comment`: `issue_comment` created|edited|deleted on an issue
 * - `pr_opened` / `pr_synchronized` / `pr_closed` / `pr_reopened` / `pr_edited`: `pull_request`, `pull_request_sync`
 * - `pr_labels`: `pull_request_label` label_updated|label_cleared
 * - `pr_comment`: a plain comment on a PR (`issue_comment` with `is_pull`)
 * - `review`: `pull_request_review_{approved,rejected,comment}`, action `reviewed`
 * - `release`, `push`
 * - `other`: a known event family with an action no rule looks at (assigned, milestoned, …)
 *
 * GitHub's and GitLab's deliveries map onto the same kinds (src/ingress/github, src/ingress/gitlab).
 */
export const FORGE_EVENT_KINDS = [
  'issue_opened',
  'issue_edited',
  'issue_closed',
  'issue_reopened',
  'issue_labels',
  'issue_comment',
  'pr_opened',
  'pr_synchronized',
  'pr_closed',
  'pr_reopened',
  'pr_edited',
  'pr_labels',
  'pr_comment',
  'review',
  'release',
  'push',
  'other',
] as const;

export type ForgeEventKind = (typeof FORGE_EVENT_KINDS)[number];

export type ReviewState = 'approved' | 'rejected' | 'comment';

export interface ForgeEvent {
  kind: ForgeEventKind;
  /** The payload's `action` as sent (`opened`, `label_updated`, `reviewed`, …); '' when absent (push). */
  action: string;
  /** The header event name that was dispatched on (X-Gitea-Event-Type, else X-Gitea-Event). */
  event: string;
  forge: ForgeName;
  owner: string;
  repo: string;
  /** Issue or PR index; absent for repository-level events (push, release). */
  number?: number;
  /** Login of the user who caused the event. */
  sender: string;
  /** Label names on the issue/PR now (after the change). */
  labels: string[];
  /** State of the issue/PR; absent for repository-level events. */
  state?: 'open' | 'closed';
  isPull: boolean;
  merged: boolean;
  title?: string;
  htmlUrl?: string;
  /** PR head branch. */
  headRef?: string;
  /** PR head commit, when the payload names it (one review per head: see catchup/). */
  headSha?: string;
  /** Set for issue_comment / pr_comment. */
  comment?: { id?: number; body: string; author: string };
  /** Set for review events. */
  review?: { state: ReviewState; body: string };
  /** Release tag (release) or pushed ref (push). */
  ref?: string;
}

/** Everything a trigger can listen to. `cron` marks a stage started by the scheduler only. */
export const TRIGGER_EVENTS = [
  'issue_opened',
  'labeled',
  'comment',
  'pr_opened',
  'pr_synchronized',
  'pr_comment',
  'review_approved',
  'review_rejected',
  'review_comment',
  'release_published',
  'push',
  'cron',
] as const;

export type TriggerEvent = (typeof TRIGGER_EVENTS)[number];

export interface Trigger {
  event: TriggerEvent;
  /**
   * `labeled`: the label that must be newly present. `issue_opened`: a label the new issue must carry.
   */
  label?: string;
  /** None of these labels may be present. */
  withoutLabels?: string[];
  /**
   * The issue must be "in analysis": open and carrying no label that any other stage's trigger
   * names (so a comment on an issue already in development does not restart the analysis).
   */
  inAnalysis?: boolean;
  /** Let events sent by baton's own bot accounts fire this trigger (opt-in chaining). @default false */
  allowBots?: boolean;
}

export type BuildWeight = 'light' | 'heavy';

/**
 * What success of a stage's run means, checked against the forge after its agent ends:
 * `pushed`: commits pushed on the run's branch or a pull request opened or updated; `review`: a
 * review submitted by the stage's bot; `result`: the agent's own result.
 */
export const SUCCESS_KINDS = ['pushed', 'review', 'result'] as const;
export type SuccessKind = (typeof SUCCESS_KINDS)[number];

export interface StageDefinition {
  name: string;
  /** Bot account that acts for the stage: a key of `config.bots` (`dev`, `review`). */
  account: string;
  build: BuildWeight;
  /** What a duplicate trigger does while the stage's run is provisioning or running. */
  onDuplicate: 'followup' | 'drop';
  triggers: Trigger[];
  /** The stage deploys: its runs carry `deployEnv` from a `deploy:<env>` label or the default. */
  deploys?: boolean;
  /** Tokens its install and build commands get. @default [] (none: they run the repository's code) */
  setupTokens?: SetupToken[];
  /**
   * Whether the agent runs Claude Code with `--dangerously-skip-permissions` when the stage's
   * command file has no `allowed-tools` (a file with `allowed-tools` pre-approves exactly those
   * tools and never skips). `false` leaves the CLI's default permission mode, in which headless
   * runs are refused every tool that needs approval.
   * @default true (DEFAULT_SKIP_PERMISSIONS)
   */
  skipPermissions?: boolean;
  /** What success means for its runs. @default DEFAULT_SUCCESS by name, else 'result' */
  success?: SuccessKind;
  /**
   * The branches its runs may push through the forge gateway: `issue` (a branch that names the
   * run's issue, `feature/issue-12-…`), `head` (the pull request's head branch, for a run on a
   * pull request), or a pattern where `*` matches any run of characters (`release/*`). Never the
   * default branch, a protected branch or a tag, whatever the list says.
   * @default DEFAULT_PUSH by name, else ['issue', 'head']
   * @example ['issue', 'head', 'docs/*']
   */
  push?: string[];
  /** Whether its runs may merge a pull request through the forge API. @default true for devops only (DEFAULT_MERGE) */
  merge?: boolean;
  /** The agent that runs it (`claude`, `codex`, `gemini`, `opencode`, `text`). @default agents.default */
  agent?: AgentName;
  /** Its agent's model. @default agents.<agent>.model, else the CLI's own */
  model?: string;
  /** The stage's own token cap per run (over `limits.tokenCap`); 0 = none. */
  tokenCap?: number;
  /** The stage's own attempts of the agent per run (over `limits.agentAttempts`). */
  agentAttempts?: number;
  /** The stage's own duration limit per run (over `limits.maxDurationMinutes`). */
  maxDurationMs?: number;
}

export interface Pipeline {
  stages: StageDefinition[];
  /** Lower-cased logins whose events never trigger anything: the bot accounts. */
  botUsers: string[];
  /** Lower-cased logins from `pipeline.ignore-users`. */
  ignoreUsers: string[];
  /** Account key → forge login (`dev` → `claude-dev`). */
  accounts: Record<string, string>;
  deploy: DeploySettings;
  /** What a comment starts with to be a command (`@baton retry`); @default DEFAULT_MENTION (`@baton`). */
  mention?: string;
}

export interface DeploySettings {
  labelPrefix: string;
  defaultEnv: string;
  /**
   * The environments a `deploy:<env>` label may name; empty = any name of the strict form
   * DEPLOY_ENV_PATTERN. A label naming anything else starts no deploy.
   */
  environments: readonly string[];
}

export interface RouteContext {
  /**
   * Labels baton saw on this issue/PR before this event; `null` when it has never seen it (then every
   * present label counts as newly present).
   */
  previousLabels: readonly string[] | null;
}

export type RouteResult = TaskRequest[] | { ignored: string };
