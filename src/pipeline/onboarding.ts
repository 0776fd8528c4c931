import type { Pipeline, TriggerEvent } from './types.js';

/**
 * The Gitea/Forgejo webhook events (the names a hook create takes, reference/gitea/API.md) that
 * each trigger needs. Label triggers also need the bare open events: the ingress remembers the
 * labels an issue was opened with, so a later label change starts only what is really new.
 */
const EVENTS_FOR_TRIGGER: Readonly<Record<TriggerEvent, readonly string[]>> = {
  issue_opened: ['issues_only'],
  labeled: ['issues_only', 'issue_label', 'pull_request_only', 'pull_request_label'],
  comment: ['issue_comment'],
  pr_opened: ['pull_request_only'],
  pr_synchronized: ['pull_request_sync'],
  pr_comment: ['pull_request_comment'],
  review_approved: ['pull_request_review'],
  review_rejected: ['pull_request_review'],
  review_comment: ['pull_request_review'],
  release_published: ['release'],
  push: ['push'],
  cron: [],
};

/** The webhook events the pipeline's triggers listen to, sorted (what `baton connect` subscribes a repository to). */
export function webhookEventsFor(pipeline: Pipeline): string[] {
  const events = new Set<string>();
  for (const stage of pipeline.stages)
    for (const trigger of stage.triggers) for (const e of EVENTS_FOR_TRIGGER[trigger.event]) events.add(e);
  return [...events].sort();
}

export interface PipelineLabel {
  name: string;
  /** `#rrggbb`. */
  color: string;
  description: string;
}

/** Colours of the default labels, by role; other labels get the neutral one. */
const COLOURS: Readonly<Record<string, string>> = {
  bug: '#d73a4a',
  release: '#5319e7',
  'ready-for-architecture': '#c5def5',
  'ready-for-development': '#0e8a16',
  'ready-for-testing': '#fbca04',
  'ready-for-deployment': '#1d76db',
};
const NEUTRAL = '#ededed';

/**
 * Every label a trigger of the pipeline starts a stage with (the labels `baton connect` makes
 * sure the repository has), in the order of the stage table, each described by what it starts.
 */
export function pipelineLabels(pipeline: Pipeline): PipelineLabel[] {
  const byName = new Map<string, { name: string; stages: string[] }>();
  for (const stage of pipeline.stages) {
    for (const trigger of stage.triggers) {
      if (!trigger.label) continue;
      const key = trigger.label.toLowerCase();
      const entry = byName.get(key) ?? { name: trigger.label, stages: [] };
      if (!entry.stages.includes(stage.name)) entry.stages.push(stage.name);
      byName.set(key, entry);
    }
  }
  return [...byName.values()].map(({ name, stages }) => ({
    name,
    color: COLOURS[name.toLowerCase()] ?? NEUTRAL,
    description: `baton: starts ${stages.join(', ')}`,
  }));
}
