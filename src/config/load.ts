import fs from 'node:fs';
import path from 'node:path';
import { Cron } from 'croner';
import YAML from 'yaml';
import { DEFAULTS } from './defaults.js';
import { parseApiSection, parseEventsSection } from './operator.js';
import { ConfigError, Problems, show } from './problems.js';
import type { Config, LogLevel, MaintenanceRepo, WorkspaceProviderName } from './types.js';

export type Env = Record<string, string | undefined>;

export interface LoadedConfig {
  config: Config;
  /** Things worth telling the operator that don't stop the start (e.g. REDIS_URL is obsolete). */
  warnings: string[];
}

/**
 * Top-level keys of baton.yaml. Sections owned by other modules are listed here so a typo in a
 * section name is caught at start instead of being silently ignored.
 */
export const FILE_SECTIONS = [
  'port',
  'host',
  'logLevel',
  'dataDir',
  'database',
  'workspaceProvider',
  'callbackUrl',
  'queue',
  'cleanup',
  'staleWorkspaceMinutes',
  'sweepMinutes',
  'schedules',
  'maintenance',
  'gitea',
  'bots',
  'coder',
  'claude',
  'api',
  'events',
  // Validated by the modules that own them (see src/http/settings.ts).
  'pipeline',
  'webhooks',
  'comments',
  'runLog',
] as const;

/** Runner settings a local workspace inherits from baton's own environment (see `baton agent --help`). */
export const AGENT_PASSTHROUGH_ENV = [
  'BATON_INSTALL_COMMAND',
  'BATON_BUILD_COMMAND',
  'BATON_BRANCH',
  'BATON_TOKEN_CAP',
  'BATON_MAX_DURATION_MS',
  'BATON_AGENT_COMMAND',
  'BATON_AGENT_OUTPUT',
  'BATON_KILL_GRACE_MS',
  'IS_SANDBOX',
] as const;

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const PROVIDERS: readonly WorkspaceProviderName[] = ['local', 'coder'];

/**
 * Resolves the configuration from the environment and an optional baton.yaml (`BATON_CONFIG`, or
 * `./baton.yaml` when present). Environment variables win over the file, the file over defaults.
 * Throws ConfigError listing every problem.
 */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): LoadedConfig {
  const problems = new Problems();
  const warnings: string[] = [];
  const { file, configFile } = readConfigFile(env, cwd, problems);
  const section = (name: string): Record<string, unknown> => {
    const value = file[name];
    if (value === undefined || value === null) return {};
    if (typeof value !== 'object' || Array.isArray(value)) {
      problems.add(`baton.yaml: ${name} must be a mapping, got ${show(value)}`);
      return {};
    }
    return value as Record<string, unknown>;
  };
  for (const key of Object.keys(file)) {
    if (!(FILE_SECTIONS as readonly string[]).includes(key)) {
      problems.add(`baton.yaml: unknown key "${key}" (known keys: ${FILE_SECTIONS.join(', ')})`);
    }
  }

  if (env.REDIS_URL) {
    warnings.push(
      'REDIS_URL is set but baton no longer uses Redis: the queue lives in the database. ' +
        'Remove REDIS_URL; set DATABASE_URL (default sqlite:./data/baton.db, or postgres://… to share the queue between replicas).',
    );
  }

  const port = problems.int('PORT', env.PORT ?? file.port, DEFAULTS.port, 0);
  if (port > 65535) problems.add(`PORT must be a whole number between 0 and 65535, got "${port}"`);
  const host = problems.string('HOST', env.HOST ?? file.host) ?? DEFAULTS.host;
  const logLevel = problems.oneOf('LOG_LEVEL', env.LOG_LEVEL ?? file.logLevel, LOG_LEVELS, DEFAULTS.logLevel);
  const dataDir = path.resolve(cwd, problems.string('BATON_DATA_DIR', env.BATON_DATA_DIR ?? file.dataDir) ?? DEFAULTS.dataDir);

  const db = section('database');
  const databaseUrl = problems.string('DATABASE_URL', env.DATABASE_URL ?? db.url) ?? DEFAULTS.databaseUrl;
  if (!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(databaseUrl)) {
    problems.add(`DATABASE_URL must be sqlite:PATH, postgres://… or postgresql://…, got ${show(databaseUrl)}`);
  }
  const sqliteSynchronous = problems.oneOf(
    'SQLITE_SYNCHRONOUS',
    env.SQLITE_SYNCHRONOUS ?? db.sqliteSynchronous,
    ['NORMAL', 'FULL'] as const,
    DEFAULTS.sqliteSynchronous,
  );

  const workspaceProvider = problems.oneOf(
    'WORKSPACE_PROVIDER',
    env.WORKSPACE_PROVIDER ?? file.workspaceProvider,
    PROVIDERS,
    DEFAULTS.workspaceProvider,
  );
  const callbackUrl = problems.url('CALLBACK_URL', env.CALLBACK_URL ?? file.callbackUrl) ?? `http://127.0.0.1:${port || DEFAULTS.port}`;

  const q = section('queue');
  const d = DEFAULTS.queue;
  const queue = {
    concurrency: problems.int('QUEUE_CONCURRENCY', env.QUEUE_CONCURRENCY ?? q.concurrency, d.concurrency, 1),
    perRepositoryConcurrency: problems.int(
      'QUEUE_PER_REPOSITORY_CONCURRENCY',
      env.QUEUE_PER_REPOSITORY_CONCURRENCY ?? q.perRepository,
      d.perRepositoryConcurrency,
      0,
    ),
    maxAttempts: problems.int('queue.maxAttempts', q.maxAttempts, d.maxAttempts, 1),
    backoffBaseMs: seconds(problems, 'queue.backoffBaseSeconds', q.backoffBaseSeconds, d.backoffBaseMs),
    backoffMaxMs: seconds(problems, 'queue.backoffMaxSeconds', q.backoffMaxSeconds, d.backoffMaxMs),
    leaseMs: seconds(problems, 'queue.leaseSeconds', q.leaseSeconds, d.leaseMs, 1),
    pollMs: seconds(problems, 'queue.pollSeconds', q.pollSeconds, d.pollMs, 0.01),
    retentionDays: problems.number('queue.retentionDays', q.retentionDays, d.retentionDays, 0),
  };

  const c = section('cleanup');
  const cleanup = {
    concurrency: problems.int('CLEANUP_CONCURRENCY', env.CLEANUP_CONCURRENCY ?? c.concurrency, DEFAULTS.cleanup.concurrency, 1),
    maxAttempts: problems.int('cleanup.maxAttempts', c.maxAttempts, DEFAULTS.cleanup.maxAttempts, 1),
    backoffBaseMs: seconds(problems, 'cleanup.backoffBaseSeconds', c.backoffBaseSeconds, DEFAULTS.cleanup.backoffBaseMs),
  };

  const staleWorkspaceMinutes = problems.int(
    'STALE_WORKSPACE_MINUTES',
    env.STALE_WORKSPACE_MINUTES ?? file.staleWorkspaceMinutes,
    DEFAULTS.staleWorkspaceMinutes,
    1,
  );

  const sweepMinutes = problems.number('SWEEP_MINUTES', env.SWEEP_MINUTES ?? file.sweepMinutes, DEFAULTS.sweepMinutes, 0.05);

  const s = section('schedules');
  const timezone = problems.string('SCHEDULE_TIMEZONE', env.SCHEDULE_TIMEZONE ?? s.timezone) ?? DEFAULTS.schedules.timezone;
  if (!isTimeZone(timezone)) problems.add(`SCHEDULE_TIMEZONE must be an IANA time zone like Europe/Berlin, got ${show(timezone)}`);
  const maintenance = problems.string('schedules.maintenance', s.maintenance) ?? DEFAULTS.schedules.maintenance;
  if (!isCron(maintenance)) {
    problems.add(`schedules.maintenance must be a cron expression like "0 9 * * 1", got ${show(maintenance)}`);
  }

  const m = section('maintenance');
  const maintenanceRepos = parseMaintenanceRepos(problems, env.MAINTENANCE_REPOS, m.repos);

  const g = section('gitea');
  const giteaUrl = problems.url('GITEA_URL', env.GITEA_URL ?? g.url);
  const bots = section('bots');
  const devBot = botSection(bots.dev);
  const reviewBot = botSection(bots.review);
  const devToken = problems.string('GITEA_DEV_TOKEN', env.GITEA_DEV_TOKEN);
  const reviewToken = problems.string('GITEA_REVIEW_TOKEN', env.GITEA_REVIEW_TOKEN);
  if (giteaUrl) {
    problems.required('GITEA_DEV_TOKEN', devToken, 'when GITEA_URL is set (token of the dev bot account)');
    problems.required('GITEA_REVIEW_TOKEN', reviewToken, 'when GITEA_URL is set (token of the review bot account)');
  }

  const cs = section('coder');
  const coder = {
    url: problems.url('CODER_URL', env.CODER_URL ?? cs.url),
    token: problems.string('CODER_TOKEN', env.CODER_TOKEN),
    templateId: problems.string('CODER_TEMPLATE_ID', env.CODER_TEMPLATE_ID ?? cs.templateId),
  };
  if (workspaceProvider === 'coder') {
    problems.required('CODER_URL', coder.url, 'when WORKSPACE_PROVIDER=coder (e.g. https://coder.example.com)');
    problems.required('CODER_TOKEN', coder.token, 'when WORKSPACE_PROVIDER=coder (a Coder session token)');
    problems.required('CODER_TEMPLATE_ID', coder.templateId, 'when WORKSPACE_PROVIDER=coder (the template UUID)');
  }

  const api = parseApiSection(problems, env, section('api'));
  const events = parseEventsSection(problems, section('events'));

  problems.throwIfAny();
  const config: Config = {
    port,
    host,
    logLevel,
    dataDir,
    database: { url: databaseUrl, sqliteSynchronous },
    workspaceProvider,
    callbackUrl,
    queue,
    cleanup,
    staleWorkspaceMinutes,
    sweepMinutes,
    schedules: { timezone, maintenance },
    maintenanceRepos,
    gitea: { url: giteaUrl, webhookSecret: problems.string('WEBHOOK_SECRET', env.WEBHOOK_SECRET) },
    bots: {
      dev: { username: env.BOT_DEV_USERNAME || devBot.username || DEFAULTS.botDevUsername, token: devToken },
      review: { username: env.BOT_REVIEW_USERNAME || reviewBot.username || DEFAULTS.botReviewUsername, token: reviewToken },
    },
    coder,
    claude: { oauthToken: problems.string('CLAUDE_OAUTH_TOKEN', env.CLAUDE_OAUTH_TOKEN) },
    api,
    events,
    agentEnv: Object.fromEntries(AGENT_PASSTHROUGH_ENV.filter((k) => env[k] !== undefined).map((k) => [k, env[k]!])),
    configFile,
    file,
  };
  return { config: deepFreeze(config), warnings };
}

function readConfigFile(env: Env, cwd: string, problems: Problems): { file: Record<string, unknown>; configFile?: string } {
  const explicit = env.BATON_CONFIG;
  const candidate = path.resolve(cwd, explicit || 'baton.yaml');
  if (!explicit && !fs.existsSync(candidate)) return { file: {} };
  let text: string;
  try {
    text = fs.readFileSync(candidate, 'utf8');
  } catch (err) {
    problems.add(`BATON_CONFIG points at ${candidate}, which cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`);
    return { file: {} };
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(text);
  } catch (err) {
    problems.add(`${candidate} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    return { file: {}, configFile: candidate };
  }
  if (parsed === null || parsed === undefined) return { file: {}, configFile: candidate };
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    problems.add(`${candidate} must hold a mapping of settings at the top level`);
    return { file: {}, configFile: candidate };
  }
  return { file: parsed as Record<string, unknown>, configFile: candidate };
}

function seconds(problems: Problems, key: string, raw: unknown, fallbackMs: number, min = 0): number {
  return Math.round(problems.number(key, raw, fallbackMs / 1000, min) * 1000);
}

function botSection(raw: unknown): { username?: string } {
  if (raw && typeof raw === 'object' && typeof (raw as { username?: unknown }).username === 'string') {
    return { username: (raw as { username: string }).username };
  }
  return {};
}

/** `MAINTENANCE_REPOS=org/repo=clone_url,org2/repo2=clone_url2`, or a list in baton.yaml. */
function parseMaintenanceRepos(problems: Problems, envValue: string | undefined, fileValue: unknown): MaintenanceRepo[] {
  const entries: { key: string; text: string }[] = [];
  if (envValue && envValue.trim() !== '') {
    for (const part of envValue
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean))
      entries.push({ key: 'MAINTENANCE_REPOS', text: part });
  } else if (fileValue !== undefined) {
    if (!Array.isArray(fileValue)) {
      problems.add(`maintenance.repos must be a list of "org/repo=clone_url" entries, got ${show(fileValue)}`);
    } else {
      fileValue.forEach((item, i) => {
        if (typeof item === 'string') entries.push({ key: `maintenance.repos[${i}]`, text: item });
        else if (item && typeof item === 'object' && 'repo' in item && 'cloneUrl' in item) {
          entries.push({ key: `maintenance.repos[${i}]`, text: `${String(item.repo)}=${String(item.cloneUrl)}` });
        } else problems.add(`maintenance.repos[${i}] must be "org/repo=clone_url" or { repo, cloneUrl }, got ${show(item)}`);
      });
    }
  }
  const repos: MaintenanceRepo[] = [];
  for (const { key, text } of entries) {
    const match = /^([^/=\s]+)\/([^/=\s]+)=(\S+)$/.exec(text);
    if (!match) {
      problems.add(`${key} entries must look like org/repo=clone_url, got ${show(text)}`);
      continue;
    }
    repos.push({ owner: match[1]!, repo: match[2]!, cloneUrl: match[3]! });
  }
  return repos;
}

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

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

export { ConfigError };
