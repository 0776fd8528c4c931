import { Cron } from 'croner';
import {
  bool,
  checkSection,
  invalid,
  join,
  leaf,
  int,
  list,
  mapping,
  number,
  oneOf,
  orFalse,
  record,
  section,
  show,
  text,
  type ResolveContext,
} from '../config-schema/index.js';
import { AGENT_NAMES, MODEL_NAME } from '../agents/index.js';
import { DEFAULT_MENTION } from './chatops.js';
import { DEFAULT_DEPLOY, DEFAULT_LABELS, DEPLOY_ENV_PATTERN, defaultStages } from './stages.js';
import { SETUP_TOKENS } from '../runner-contract/index.js';
import { SUCCESS_KINDS, TRIGGER_EVENTS, type Pipeline, type StageDefinition, type Trigger } from './types.js';

export interface MaintenanceRepo {
  owner: string;
  repo: string;
  cloneUrl: string;
}

const STAGE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

const names = (doc: string) => list(text({ doc: 'a name' }), { doc });
const label = (role: keyof typeof DEFAULT_LABELS) => text({ default: DEFAULT_LABELS[role], doc: `name of the ${role} label` });

const trigger = mapping(
  {
    event: oneOf(TRIGGER_EVENTS, { doc: 'what starts the stage; `{ label: x }` alone means labeled' }),
    label: text({ doc: 'labeled: the label newly present; issue_opened: a label the new issue carries' }),
    withoutLabels: names('labels the issue must not carry'),
    inAnalysis: bool({ doc: 'the issue must be in analysis (open, none of the later stages’ labels)' }),
    allowBots: bool({ doc: 'events of the bot accounts may trigger it too' }),
  },
  {
    check: (t, key) => {
      if (t.event === undefined && t.label === undefined) return [`${key}.event is required (one of ${TRIGGER_EVENTS.join(', ')})`];
      if ((t.event ?? 'labeled') === 'labeled' && t.label === undefined) return [`${key}.label is required when event is labeled`];
      return [];
    },
  },
);

/** An environment name from a label is handed to the devops prompt: a strict form, never an option or a path. */
const deployEnv = (value: string) =>
  DEPLOY_ENV_PATTERN.test(value)
    ? undefined
    : invalid('must be an environment name: 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit');

const stage = orFalse(
  mapping({
    account: text({ doc: 'bot account that acts for the stage (a key of bots: dev, review)' }),
    build: oneOf(['light', 'heavy'], { doc: 'heavy stages run the install and build commands first' }),
    onDuplicate: oneOf(['followup', 'drop'], { doc: 'a trigger while the run is live asks for one follow-up run, or is dropped' }),
    triggers: list(trigger, { doc: 'what starts the stage' }),
    deploys: bool({ doc: 'the stage deploys: its runs carry the deploy:ENV label’s environment' }),
    skipPermissions: bool({
      doc: 'without allowed-tools in its command file, run the agent with --dangerously-skip-permissions (default true)',
    }),
    setupTokens: list(oneOf(SETUP_TOKENS, { doc: 'forge (the bot account’s token) or agent (the Claude token)' }), {
      doc: 'tokens the install and build commands (the repository’s own code) get; none by default',
    }),
    success: oneOf(SUCCESS_KINDS, {
      doc: 'what success means, checked on the forge after the agent ends: pushed (commits or a pull request), review (a review submitted), result (the agent’s own)',
    }),
    push: list(
      text({
        doc: 'issue, head or a branch pattern',
        check: (v) =>
          v === 'issue' || v === 'head' || /^[A-Za-z0-9._*-][A-Za-z0-9._/*-]{0,199}$/.test(v)
            ? undefined
            : invalid('must be issue, head or a branch pattern like release/* (letters, digits, ".", "_", "-", "/", "*")'),
      }),
      {
        doc: 'branches its runs may push through the forge gateway: issue (a branch naming the run’s issue), head (the pull request’s head), patterns with * (release/*); [] for none; never the default or a protected branch',
      },
    ),
    merge: bool({ doc: 'its runs may merge a pull request through the forge API (default: devops only)' }),
    agent: oneOf(AGENT_NAMES, { doc: 'the agent that runs the stage: claude, codex, gemini, opencode or text (default: agents.default)' }),
    model: text({
      doc: "the agent's model for this stage (default: agents.<agent>.model, else the CLI's own)",
      check: (v) => (MODEL_NAME.test(v) ? undefined : invalid('must be a model name such as gpt-5-codex or anthropic/claude-sonnet-4-5')),
    }),
    tokenCap: int({ min: 0, doc: 'the stage’s own token cap per run (overrides limits.tokenCap); 0 = no cap' }),
    agentAttempts: int({
      min: 1,
      doc: 'the stage’s own attempts of the agent per run on transient failures (overrides limits.agentAttempts)',
    }),
    maxDurationMinutes: number({ min: 0.01, doc: 'the stage’s own duration limit per run (overrides limits.maxDurationMinutes)' }),
    enabled: bool({ doc: 'false removes the stage' }),
  }),
);

/**
 * `pipeline:` in baton.yaml, over the default SDLC table:
 *
 * ```yaml
 * pipeline:
 *   ignore-users: [renovate]
 *   labels: { ready-for-development: dev-ready }   # rename a default label
 *   deploy: { labelPrefix: "deploy:", defaultEnv: staging, environments: [staging, production] }
 *   stages:
 *     develop: { account: review, onDuplicate: drop }
 *     analyse: { skipPermissions: false }            # without allowed-tools: the CLI's default permissions
 *     test: { setupTokens: [forge] }                 # its install/build commands get the forge token
 *     develop: { push: [issue, head, "docs/*"] }     # the branches its runs may push (gateway)
 *     review-code: { tokenCap: 800000, maxDurationMinutes: 90 }   # its own limits per run
 *     analyse: { agent: gemini, model: gemini-2.5-flash }         # another agent and model
 *     analyse: false                                 # remove a stage
 *     docs:                                          # add a stage
 *       account: dev
 *       build: light
 *       triggers: [{ event: labeled, label: docs }]
 * ```
 */
export const pipelineSection = section(
  mapping({
    mention: text({
      default: DEFAULT_MENTION,
      doc: 'a comment starting with it is a command (`@baton retry`, `@baton help`); only users with write access may give one',
      check: (m) => (/^@?[A-Za-z0-9][\w.-]{0,38}$/.test(m) ? undefined : invalid('must be a mention like @baton')),
    }),
    'ignore-users': names('logins whose events never trigger anything (besides the bot accounts)'),
    ignoreUsers: names('the same as ignore-users'),
    labels: mapping({
      bug: label('bug'),
      release: label('release'),
      'ready-for-architecture': label('ready-for-architecture'),
      'ready-for-development': label('ready-for-development'),
      'ready-for-testing': label('ready-for-testing'),
      'ready-for-deployment': label('ready-for-deployment'),
    }),
    deploy: mapping({
      labelPrefix: text({ default: DEFAULT_DEPLOY.labelPrefix, doc: 'a label PREFIX+ENV picks the environment of a deploying stage' }),
      defaultEnv: text({ default: DEFAULT_DEPLOY.defaultEnv, doc: 'the environment when no such label is set', check: deployEnv }),
      environments: list(text({ doc: 'an environment name', check: deployEnv }), {
        doc: 'the environments a deploy label may name; without it, any name of the strict form (letters, digits, ".", "_", "-")',
      }),
    }),
    stages: record(stage, {
      doc: 'stage name to its settings, or false to remove it',
      key: (name) =>
        STAGE_NAME.test(name)
          ? undefined
          : invalid('is not a stage name: lower-case letters, digits and dashes (it names .claude/commands/<stage>.md)'),
    }),
  }),
  (v, ctx: ResolveContext<{ bots: Readonly<Record<string, { username: string }>> }>): Pipeline => {
    const { bots } = ctx.deps;
    const accountNames = Object.keys(bots);
    const stages = defaultStages(v.labels);
    for (const [name, raw] of Object.entries(v.stages)) {
      const key = join('pipeline.stages', name);
      const index = stages.findIndex((s) => s.name === name);
      if (raw === false || raw.enabled === false) {
        if (index >= 0) stages.splice(index, 1);
        continue;
      }
      const base = stages[index];
      const next: StageDefinition = base
        ? { ...base, triggers: [...base.triggers] }
        : { name, account: 'dev', build: 'heavy', onDuplicate: 'followup', triggers: [] };
      if (raw.account !== undefined) {
        if (accountNames.includes(raw.account)) next.account = raw.account;
        else ctx.problem(`${key}.account must be one of ${accountNames.join(', ')}, got ${show(raw.account)}`);
      }
      if (raw.build !== undefined) next.build = raw.build;
      if (raw.onDuplicate !== undefined) next.onDuplicate = raw.onDuplicate;
      if (raw.deploys !== undefined) next.deploys = raw.deploys;
      if (raw.skipPermissions !== undefined) next.skipPermissions = raw.skipPermissions;
      if (raw.success !== undefined) next.success = raw.success;
      if (raw.push !== undefined) next.push = [...new Set(raw.push)];
      if (raw.merge !== undefined) next.merge = raw.merge;
      if (raw.agent !== undefined) next.agent = raw.agent;
      if (raw.model !== undefined) next.model = raw.model;
      if (raw.tokenCap !== undefined) next.tokenCap = raw.tokenCap;
      if (raw.agentAttempts !== undefined) next.agentAttempts = raw.agentAttempts;
      if (raw.maxDurationMinutes !== undefined) next.maxDurationMs = Math.round(raw.maxDurationMinutes * 60_000);
      if (raw.setupTokens?.length) next.setupTokens = [...new Set(raw.setupTokens)];
      if (raw.triggers !== undefined) next.triggers = raw.triggers.map(toTrigger);
      else if (!base) {
        ctx.problem(`${key}.triggers is required for a new stage (e.g. [{ event: labeled, label: ${name} }])`);
        continue;
      }
      if (base) stages[index] = next;
      else stages.push(next);
    }
    return {
      stages,
      botUsers: accountNames.map((name) => bots[name]!.username.toLowerCase()).filter(Boolean),
      ignoreUsers: (v['ignore-users'] ?? v.ignoreUsers ?? []).map((u) => u.toLowerCase()),
      accounts: Object.fromEntries(accountNames.map((name) => [name, bots[name]!.username])),
      deploy: { ...v.deploy, environments: v.deploy.environments ?? [] },
      mention: v.mention,
    };
  },
);

function toTrigger(t: {
  event?: Trigger['event'];
  label?: string;
  withoutLabels?: string[];
  inAnalysis?: boolean;
  allowBots?: boolean;
}): Trigger {
  // `{ label: x }` alone reads naturally as "when label x is added".
  const result: Trigger = { event: t.event ?? 'labeled' };
  if (t.label !== undefined) result.label = t.label;
  if (t.withoutLabels !== undefined) result.withoutLabels = t.withoutLabels;
  if (t.inAnalysis !== undefined) result.inAnalysis = t.inAnalysis;
  if (t.allowBots !== undefined) result.allowBots = t.allowBots;
  return result;
}

/**
 * The pipeline from a raw `pipeline:` value, on its own (tests, benchmarks). `problems` is empty
 * when the section is fine; the pipeline is usable either way (bad entries keep their defaults).
 */
export function parsePipelineConfig(
  raw: unknown,
  bots: Readonly<Record<string, { username: string }>>,
): { pipeline: Pipeline; problems: string[] } {
  const { value, problems } = checkSection(pipelineSection, 'pipeline', raw, { bots });
  return { pipeline: value, problems };
}

/** `schedules:` in baton.yaml. */
export const schedulesSection = section(
  mapping({
    timezone: text({
      env: 'SCHEDULE_TIMEZONE',
      default: 'UTC',
      doc: 'IANA time zone of the cron schedules',
      check: (zone) => (isTimeZone(zone) ? undefined : invalid('must be an IANA time zone like Europe/Berlin')),
    }),
    maintenance: text({
      default: '0 9 * * 1',
      doc: 'when the maintenance stage runs for every maintenance.repos entry (cron; Monday 09:00)',
      check: (expression) => (isCron(expression) ? undefined : invalid('must be a cron expression like "0 9 * * 1"')),
    }),
  }),
);

/** `maintenance:` in baton.yaml. */
export const maintenanceSection = section(
  mapping({
    repos: list(
      leaf<MaintenanceRepo>({
        doc: '"org/repo=clone_url" or { repo: org/repo, cloneUrl }',
        parse: (raw) => {
          const entry = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
          const textForm = entry
            ? Object.keys(entry).sort().join() === 'cloneUrl,repo'
              ? `${String(entry.repo)}=${String(entry.cloneUrl)}`
              : ''
            : raw;
          const match = typeof textForm === 'string' ? /^([^/=\s]+)\/([^/=\s]+)=(\S+)$/.exec(textForm.trim()) : null;
          if (!match) return invalid('must look like org/repo=clone_url (or { repo: org/repo, cloneUrl })');
          return { owner: match[1]!, repo: match[2]!, cloneUrl: match[3]! };
        },
      }),
      { env: 'MAINTENANCE_REPOS', doc: 'repositories that get the scheduled maintenance stage: org/repo=clone_url,…' },
    ),
  }),
  (v): { repos: MaintenanceRepo[] } => ({ repos: v.repos ?? [] }),
);

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function isCron(expression: string): boolean {
  try {
    new Cron(expression, { paused: true }).stop();
    return true;
  } catch {
    return false;
  }
}
