import { STAGE } from '../runner-contract/index.js';
import type { Pipeline, StageDefinition, SuccessKind } from './types.js';

/**
 * The labels the default table listens to, by role. `pipeline.labels` in baton.yaml renames them
 * (`labels: { ready-for-development: dev-ready }`).
 */
export const DEFAULT_LABELS = {
  bug: 'bug',
  release: 'release',
  'ready-for-architecture': 'ready-for-architecture',
  'ready-for-development': 'ready-for-development',
  'ready-for-testing': 'ready-for-testing',
  'ready-for-deployment': 'ready-for-deployment',
} as const;

export type LabelRole = keyof typeof DEFAULT_LABELS;

export const DEFAULT_DEPLOY = { labelPrefix: 'deploy:', defaultEnv: 'staging', environments: [] as readonly string[] } as const;

/**
 * What a deploy environment name may look like. The name comes from a label (anyone who may
 * label the issue chooses it) and becomes the devops prompt's `$ARGUMENTS` and `DEPLOY_ENV`.
 */
export const DEPLOY_ENV_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** What success means for the default stages that change code or review it; every other stage: its agent's result. */
export const DEFAULT_SUCCESS: Readonly<Record<string, SuccessKind>> = {
  [STAGE.develop]: 'pushed',
  [STAGE.fixBug]: 'pushed',
  [STAGE.reworkPr]: 'pushed',
  [STAGE.reviewCode]: 'review',
};

/** The stage's `success`, or its default. */
export function successOf(stage: Pick<StageDefinition, 'name' | 'success'>): SuccessKind {
  return stage.success ?? DEFAULT_SUCCESS[stage.name] ?? 'result';
}

/**
 * What each default stage may push through the forge gateway when its settings say nothing
 * (`pipeline.stages.<name>.push`); every other stage gets DEFAULT_PUSH_RULES. The prompts name
 * these branches: develop and fix-bug push a branch naming the issue, rework-pr and test the pull
 * request's head, release `release/v<version>`, maintenance `chore/maintenance-<date>`; the
 * reviewer pushes nothing.
 */
export const DEFAULT_PUSH_RULES: readonly string[] = ['issue', 'head'];
export const DEFAULT_PUSH: Readonly<Record<string, readonly string[]>> = {
  [STAGE.release]: ['issue', 'head', 'release/*'],
  [STAGE.maintenance]: ['chore/maintenance-*'],
  [STAGE.reviewCode]: [],
};
/** The stages that may merge a pull request through the forge API by default: devops merges before it deploys. */
export const DEFAULT_MERGE: readonly string[] = [STAGE.devops];

/** The stage's push rules, or their default. */
export function pushRulesOf(stage: Pick<StageDefinition, 'name' | 'push'>): readonly string[] {
  return stage.push ?? DEFAULT_PUSH[stage.name] ?? DEFAULT_PUSH_RULES;
}

/** Whether the stage's runs may merge pull requests. */
export function mayMergeOf(stage: Pick<StageDefinition, 'name' | 'merge'>): boolean {
  return stage.merge ?? DEFAULT_MERGE.includes(stage.name);
}

/** A stage without `skipPermissions` in its settings skips permission prompts (the workspace is the sandbox). */
export const DEFAULT_SKIP_PERMISSIONS = true;

/** The default SDLC table (ARCHITECTURE.md), with the label names given. */
export function defaultStages(labels: Record<LabelRole, string> = DEFAULT_LABELS): StageDefinition[] {
  return [
    {
      name: STAGE.analyse,
      account: 'dev',
      build: 'light',
      onDuplicate: 'followup',
      // "Opened without `bug`": in-analysis excludes bug and every later stage's label, so an issue
      // opened straight into a later stage does not also start an analysis.
      triggers: [
        { event: 'issue_opened', inAnalysis: true },
        { event: 'comment', inAnalysis: true },
      ],
    },
    {
      name: STAGE.fixBug,
      account: 'dev',
      build: 'heavy',
      onDuplicate: 'followup',
      triggers: [{ event: 'issue_opened', label: labels.bug }],
    },
    {
      name: STAGE.architect,
      account: 'dev',
      build: 'light',
      onDuplicate: 'followup',
      triggers: [{ event: 'labeled', label: labels['ready-for-architecture'] }],
    },
    {
      name: STAGE.develop,
      account: 'dev',
      build: 'heavy',
      onDuplicate: 'followup',
      triggers: [{ event: 'labeled', label: labels['ready-for-development'] }],
    },
    {
      name: STAGE.reviewCode,
      account: 'review',
      build: 'heavy',
      onDuplicate: 'followup',
      triggers: [{ event: 'pr_opened' }, { event: 'pr_synchronized' }],
    },
    {
      name: STAGE.reworkPr,
      account: 'dev',
      build: 'heavy',
      onDuplicate: 'followup',
      triggers: [{ event: 'review_rejected' }],
    },
    {
      name: STAGE.test,
      account: 'review',
      build: 'heavy',
      onDuplicate: 'followup',
      triggers: [{ event: 'review_approved' }, { event: 'labeled', label: labels['ready-for-testing'] }],
    },
    {
      name: STAGE.devops,
      account: 'dev',
      build: 'heavy',
      onDuplicate: 'followup',
      deploys: true,
      triggers: [{ event: 'labeled', label: labels['ready-for-deployment'] }],
    },
    {
      name: STAGE.release,
      account: 'dev',
      build: 'light',
      onDuplicate: 'followup',
      triggers: [
        { event: 'issue_opened', label: labels.release },
        { event: 'labeled', label: labels.release },
      ],
    },
    {
      name: STAGE.maintenance,
      account: 'dev',
      build: 'light',
      onDuplicate: 'followup',
      triggers: [{ event: 'cron' }],
    },
  ];
}

/** The default pipeline for the given bot logins. */
export function defaultPipeline(bots: { dev: { username: string }; review: { username: string } }): Pipeline {
  return {
    stages: defaultStages(),
    botUsers: [bots.dev.username.toLowerCase(), bots.review.username.toLowerCase()],
    ignoreUsers: [],
    accounts: { dev: bots.dev.username, review: bots.review.username },
    deploy: { ...DEFAULT_DEPLOY, environments: [] },
  };
}
