import { show } from '../config/index.js';
import { DEFAULT_DEPLOY, DEFAULT_LABELS, DEPLOY_ENV_PATTERN, defaultStages, type LabelRole } from './stages.js';
import { TRIGGER_EVENTS, type Pipeline, type StageDefinition, type Trigger, type TriggerEvent } from './types.js';

const PIPELINE_KEYS = ['ignore-users', 'ignoreUsers', 'labels', 'deploy', 'stages'] as const;
const STAGE_KEYS = ['account', 'build', 'onDuplicate', 'triggers', 'deploys', 'skipPermissions', 'enabled'] as const;
const TRIGGER_KEYS = ['event', 'label', 'withoutLabels', 'inAnalysis', 'allowBots'] as const;
const STAGE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const DEPLOY_ENV_RULE = 'is not an environment name: use 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit';

/**
 * Reads the `pipeline:` section of baton.yaml over the default SDLC table. Every problem names its
 * key (`pipeline.stages.develop.account must be one of dev, review, got "x"`); the pipeline
 * returned is usable even when there are problems (bad entries fall back to their defaults), but
 * a caller should refuse to start when `problems` is not empty.
 *
 * ```yaml
 * pipeline:
 *   ignore-users: [renovate]
 *   labels: { ready-for-development: dev-ready }   # rename a default label
 *   deploy: { labelPrefix: "deploy:", defaultEnv: staging, environments: [staging, production] }
 *   stages:
 *     develop: { account: review, onDuplicate: drop }
 *     analyse: { skipPermissions: false }             # without allowed-tools: the CLI's default permissions
 *     analyse: false                                 # remove a stage
 *     docs:                                          # add a stage
 *       account: dev
 *       build: light
 *       triggers: [{ event: labeled, label: docs }]
 * ```
 */
export function parsePipelineConfig(
  section: unknown,
  bots: Readonly<Record<string, { username: string }>>,
): { pipeline: Pipeline; problems: string[] } {
  const problems: string[] = [];
  const accountNames = Object.keys(bots);
  const accounts = Object.fromEntries(accountNames.map((name) => [name, bots[name]!.username]));
  const botUsers = accountNames.map((name) => bots[name]!.username.toLowerCase()).filter(Boolean);
  const result = (stages: StageDefinition[], ignoreUsers: string[] = [], deploy: Pipeline['deploy'] = { ...DEFAULT_DEPLOY }) => ({
    pipeline: { stages, botUsers, ignoreUsers, accounts, deploy },
    problems,
  });

  if (section === undefined || section === null) return result(defaultStages());
  if (!isMapping(section)) {
    problems.push(`pipeline must be a mapping, got ${show(section)}`);
    return result(defaultStages());
  }
  unknownKeys(section, PIPELINE_KEYS, 'pipeline', problems);

  const ignoreUsers = stringList(section['ignore-users'] ?? section.ignoreUsers, 'pipeline.ignore-users', problems).map((u) =>
    u.toLowerCase(),
  );

  const labels: Record<LabelRole, string> = { ...DEFAULT_LABELS };
  if (section.labels !== undefined && section.labels !== null) {
    if (!isMapping(section.labels))
      problems.push(`pipeline.labels must be a mapping of label role to label name, got ${show(section.labels)}`);
    else {
      for (const [role, name] of Object.entries(section.labels)) {
        if (!(role in DEFAULT_LABELS)) {
          problems.push(`pipeline.labels.${role} is not a known label role (known: ${Object.keys(DEFAULT_LABELS).join(', ')})`);
        } else if (typeof name !== 'string' || name.trim() === '') {
          problems.push(`pipeline.labels.${role} must be a label name, got ${show(name)}`);
        } else labels[role as LabelRole] = name.trim();
      }
    }
  }

  const deploy: Pipeline['deploy'] = { ...DEFAULT_DEPLOY };
  if (section.deploy !== undefined && section.deploy !== null) {
    if (!isMapping(section.deploy)) problems.push(`pipeline.deploy must be a mapping, got ${show(section.deploy)}`);
    else {
      unknownKeys(section.deploy, ['labelPrefix', 'defaultEnv', 'environments'], 'pipeline.deploy', problems);
      for (const key of ['labelPrefix', 'defaultEnv'] as const) {
        const value = section.deploy[key];
        if (value === undefined) continue;
        if (typeof value !== 'string' || value.trim() === '')
          problems.push(`pipeline.deploy.${key} must be a non-empty string, got ${show(value)}`);
        else deploy[key] = value.trim();
      }
      const environments = stringList(section.deploy.environments, 'pipeline.deploy.environments', problems);
      const bad = environments.find((e) => !DEPLOY_ENV_PATTERN.test(e));
      if (bad !== undefined) problems.push(`pipeline.deploy.environments: ${show(bad)} ${DEPLOY_ENV_RULE}`);
      else deploy.environments = environments;
    }
  }
  if (!DEPLOY_ENV_PATTERN.test(deploy.defaultEnv))
    problems.push(`pipeline.deploy.defaultEnv: ${show(deploy.defaultEnv)} ${DEPLOY_ENV_RULE}`);

  const stages = defaultStages(labels);
  if (section.stages !== undefined && section.stages !== null) {
    if (!isMapping(section.stages))
      problems.push(`pipeline.stages must be a mapping of stage name to settings, got ${show(section.stages)}`);
    else {
      for (const [name, raw] of Object.entries(section.stages)) {
        const key = `pipeline.stages.${name}`;
        const index = stages.findIndex((s) => s.name === name);
        if (raw === false || raw === null || (isMapping(raw) && raw.enabled === false)) {
          if (index >= 0) stages.splice(index, 1);
          continue;
        }
        if (!STAGE_NAME.test(name)) {
          problems.push(
            `${key}: stage names must be lower-case letters, digits and dashes (they name .claude/commands/<stage>.md), got ${show(name)}`,
          );
          continue;
        }
        if (!isMapping(raw)) {
          problems.push(`${key} must be a mapping (account, build, onDuplicate, triggers) or false to remove it, got ${show(raw)}`);
          continue;
        }
        const stage = parseStage(raw, key, index >= 0 ? stages[index] : undefined, name, accountNames, problems);
        if (!stage) continue;
        if (index >= 0) stages[index] = stage;
        else stages.push(stage);
      }
    }
  }
  return result(stages, ignoreUsers, deploy);
}

function parseStage(
  raw: Record<string, unknown>,
  key: string,
  base: StageDefinition | undefined,
  name: string,
  accountNames: string[],
  problems: string[],
): StageDefinition | undefined {
  unknownKeys(raw, STAGE_KEYS, key, problems);
  const stage: StageDefinition = base
    ? { ...base, triggers: [...base.triggers] }
    : { name, account: 'dev', build: 'heavy', onDuplicate: 'followup', triggers: [] };
  if (raw.account !== undefined) {
    if (typeof raw.account === 'string' && accountNames.includes(raw.account)) stage.account = raw.account;
    else problems.push(`${key}.account must be one of ${accountNames.join(', ')}, got ${show(raw.account)}`);
  }
  if (raw.build !== undefined) {
    if (raw.build === 'light' || raw.build === 'heavy') stage.build = raw.build;
    else problems.push(`${key}.build must be one of light, heavy, got ${show(raw.build)}`);
  }
  if (raw.onDuplicate !== undefined) {
    if (raw.onDuplicate === 'followup' || raw.onDuplicate === 'drop') stage.onDuplicate = raw.onDuplicate;
    else problems.push(`${key}.onDuplicate must be one of followup, drop, got ${show(raw.onDuplicate)}`);
  }
  if (raw.deploys !== undefined) {
    if (typeof raw.deploys === 'boolean') stage.deploys = raw.deploys;
    else problems.push(`${key}.deploys must be true or false, got ${show(raw.deploys)}`);
  }
  if (raw.skipPermissions !== undefined) {
    if (typeof raw.skipPermissions === 'boolean') stage.skipPermissions = raw.skipPermissions;
    else problems.push(`${key}.skipPermissions must be true or false, got ${show(raw.skipPermissions)}`);
  }
  if (raw.triggers !== undefined) {
    if (!Array.isArray(raw.triggers)) problems.push(`${key}.triggers must be a list of triggers, got ${show(raw.triggers)}`);
    else {
      const triggers = raw.triggers
        .map((t, i) => parseTrigger(t, `${key}.triggers[${i}]`, problems))
        .filter((t): t is Trigger => t !== undefined);
      stage.triggers = triggers;
    }
  } else if (!base) {
    problems.push(`${key}.triggers is required for a new stage (e.g. [{ event: labeled, label: ${name} }])`);
    return undefined;
  }
  return stage;
}

function parseTrigger(raw: unknown, key: string, problems: string[]): Trigger | undefined {
  if (!isMapping(raw)) {
    problems.push(`${key} must be a mapping like { event: labeled, label: ready-for-development }, got ${show(raw)}`);
    return undefined;
  }
  unknownKeys(raw, TRIGGER_KEYS, key, problems);
  // `{ label: x }` alone reads naturally as "when label x is added".
  const eventRaw = raw.event ?? (raw.label !== undefined ? 'labeled' : undefined);
  if (eventRaw === undefined) {
    problems.push(`${key}.event is required (one of ${TRIGGER_EVENTS.join(', ')})`);
    return undefined;
  }
  if (typeof eventRaw !== 'string' || !(TRIGGER_EVENTS as readonly string[]).includes(eventRaw)) {
    problems.push(`${key}.event must be one of ${TRIGGER_EVENTS.join(', ')}, got ${show(eventRaw)}`);
    return undefined;
  }
  const trigger: Trigger = { event: eventRaw as TriggerEvent };
  let ok = true;
  if (raw.label !== undefined) {
    if (typeof raw.label === 'string' && raw.label.trim() !== '') trigger.label = raw.label.trim();
    else {
      problems.push(`${key}.label must be a label name, got ${show(raw.label)}`);
      ok = false;
    }
  } else if (trigger.event === 'labeled') {
    problems.push(`${key}.label is required when event is labeled`);
    ok = false;
  }
  if (raw.withoutLabels !== undefined) trigger.withoutLabels = stringList(raw.withoutLabels, `${key}.withoutLabels`, problems);
  for (const flag of ['inAnalysis', 'allowBots'] as const) {
    if (raw[flag] === undefined) continue;
    if (typeof raw[flag] === 'boolean') trigger[flag] = raw[flag];
    else {
      problems.push(`${key}.${flag} must be true or false, got ${show(raw[flag])}`);
      ok = false;
    }
  }
  return ok ? trigger : undefined;
}

function stringList(raw: unknown, key: string, problems: string[]): string[] {
  if (raw === undefined || raw === null) return [];
  if (typeof raw === 'string')
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  if (Array.isArray(raw) && raw.every((v) => typeof v === 'string')) return raw.map((s) => s.trim()).filter(Boolean);
  problems.push(`${key} must be a list of names, got ${show(raw)}`);
  return [];
}

function unknownKeys(raw: Record<string, unknown>, known: readonly string[], key: string, problems: string[]): void {
  for (const name of Object.keys(raw)) {
    if (!known.includes(name)) problems.push(`${key}.${name} is not a known key (known: ${known.join(', ')})`);
  }
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
