import type { Config } from './types.js';

const MASK = '********';

/**
 * The resolved configuration with every secret replaced by a mask (or `(not set)`), for
 * `baton config check` and start-up logs. Database URLs keep their host but lose the password.
 */
export function describeConfig(config: Config): Record<string, unknown> {
  const secret = (value: string | undefined) => (value ? MASK : '(not set)');
  return {
    configFile: config.configFile ?? '(none)',
    port: config.port,
    host: config.host,
    logLevel: config.logLevel,
    dataDir: config.dataDir,
    database: { url: maskUrlPassword(config.database.url), sqliteSynchronous: config.database.sqliteSynchronous },
    workspaceProvider: config.workspaceProvider,
    callbackUrl: config.callbackUrl,
    queue: config.queue,
    cleanup: config.cleanup,
    staleWorkspaceMinutes: config.staleWorkspaceMinutes,
    sweepMinutes: config.sweepMinutes,
    schedules: config.schedules,
    maintenanceRepos: config.maintenanceRepos.map((r) => `${r.owner}/${r.repo}=${maskUrlPassword(r.cloneUrl)}`),
    gitea: { url: config.gitea.url ?? '(not set)', webhookSecret: secret(config.gitea.webhookSecret) },
    bots: {
      dev: { username: config.bots.dev.username, token: secret(config.bots.dev.token) },
      review: { username: config.bots.review.username, token: secret(config.bots.review.token) },
    },
    coder: { url: config.coder.url ?? '(not set)', token: secret(config.coder.token), templateId: config.coder.templateId ?? '(not set)' },
    claude: { oauthToken: secret(config.claude.oauthToken) },
    api: {
      publicQueue: config.api.publicQueue,
      publicMetrics: config.api.publicMetrics,
      bootstrapToken: secret(config.api.bootstrapToken),
    },
    events: { webhooks: config.events.webhooks.map((w) => ({ url: maskUrlPassword(w.url), secret: secret(w.secret), events: w.events })) },
    agentEnv: config.agentEnv,
  };
}

export function maskUrlPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = MASK;
    return parsed.toString();
  } catch {
    return url;
  }
}
