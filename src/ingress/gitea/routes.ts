import type { ForgeEventKind } from '../../pipeline/index.js';

/**
 * The webhook paths. `/webhook/gitea` takes every event. The legacy paths come from the n8n
 * workflows baton replaces: each Gitea webhook there pointed at one workflow, so each path acts
 * only on the events its name promises and only starts the stages that workflow started;
 * anything else is stored and answered 202 like every delivery, and its verdict says why it
 * started nothing. Every path reads and moves the same label memory
 * (LABEL_MEMORY_SCOPE, inbox/normalize.ts): one label change delivered to two paths is one change,
 * and each path starts only its own stages from it.
 */
export interface WebhookRoute {
  path: string;
  /** Event kinds acted on; undefined = all. */
  kinds?: readonly ForgeEventKind[];
  /** Stages this path may start; undefined = all. */
  stages?: readonly string[];
  /** Stages this path never starts (they belong to another legacy path). */
  excludeStages?: readonly string[];
}

const ISSUE_LIFECYCLE: ForgeEventKind[] = ['issue_opened', 'issue_edited', 'issue_closed', 'issue_reopened'];

export const WEBHOOK_ROUTES: readonly WebhookRoute[] = [
  { path: '/webhook/gitea' },
  { path: '/webhook/gitea-issue-triage', kinds: ISSUE_LIFECYCLE, stages: ['analyse', 'fix-bug'] },
  { path: '/webhook/gitea-issue-label', kinds: ['issue_labels', 'pr_labels'], excludeStages: ['release'] },
  { path: '/webhook/gitea-issue-comment', kinds: ['issue_comment', 'pr_comment'] },
  {
    path: '/webhook/gitea-pr-review',
    kinds: ['pr_opened', 'pr_synchronized', 'pr_edited', 'pr_closed', 'pr_reopened'],
    stages: ['review-code'],
  },
  { path: '/webhook/gitea-pr-review-rework', kinds: ['review'], stages: ['rework-pr', 'test'] },
  { path: '/webhook/gitea-release', kinds: ['issue_opened', 'issue_labels', 'release'], stages: ['release'] },
];

export function allowsStage(route: WebhookRoute, stage: string): boolean {
  if (route.stages && !route.stages.includes(stage)) return false;
  return !route.excludeStages?.includes(stage);
}
