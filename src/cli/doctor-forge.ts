import {
  createGiteaClient,
  createGitHubAppAuth,
  createGitHubClient,
  createGitLabClient,
  ForgeError,
  type ForgeClient,
  type GitHubAppIdentity,
} from '../forge/index.js';
import { forgeWebhookEvents } from './connect-command.js';
import type { Config } from '../server/index.js';
import { PROBE_MS, type Line } from './doctor-lines.js';
import type { CommandIo } from './io.js';

// baton doctor's forge checks: GITEA_URL, the webhook secret, each bot's token (valid, of the
// expected user, its scopes) and its rights on each repository; GitHub's and GitLab's tokens.

/** The repositories the configuration names exactly (patterns with `*` name none). */
function configuredRepositories(config: Config, extra: readonly string[]): string[] {
  const names = [
    ...extra,
    ...Object.keys(config.webhooks.repositories),
    ...config.maintenance.repos.map((r) => `${r.owner}/${r.repo}`),
    ...config.webhooks.allow.filter((p) => !p.includes('*')),
  ];
  const seen = new Map<string, string>();
  for (const name of names) if (!seen.has(name.toLowerCase())) seen.set(name.toLowerCase(), name);
  return [...seen.values()];
}

export async function checkForge(config: Config, io: CommandIo, extra: readonly string[]): Promise<Line[]> {
  const lines: Line[] = [];
  const url = config.gitea.url;
  const others = [config.github.url ? 'GitHub' : '', config.gitlab.url ? 'GitLab' : ''].filter(Boolean);
  if (!url && others.length > 0) {
    const what = `${others.join(' and ')} ${others.length === 1 ? 'is' : 'are'} configured`;
    lines.push({ status: 'info', check: 'forge', detail: `GITEA_URL is not set: Gitea and Forgejo are off (${what})` });
    return lines;
  }
  if (!url) {
    lines.push({
      status: 'warn',
      check: 'forge',
      detail: 'GITEA_URL is not set: no webhooks are acted on with status comments, and only repositories declared in baton.yaml can run',
      fix: 'set GITEA_URL, GITEA_DEV_TOKEN and GITEA_REVIEW_TOKEN (docs/gitea.md)',
    });
    return lines;
  }
  lines.push(webhookSecretLine(config));
  const repos = configuredRepositories(config, extra);
  for (const [account, bot] of Object.entries(config.bots)) {
    const variable = `GITEA_${account.toUpperCase()}_TOKEN`;
    const check = `bot ${account}`;
    if (!bot.token) {
      lines.push({
        status: 'FAIL',
        check,
        detail: `${variable} is not set`,
        fix: `give the ${bot.username} account's token (docs/gitea.md)`,
      });
      continue;
    }
    const client = createGiteaClient({ baseUrl: url, token: bot.token, fetch: io.fetch, timeoutMs: PROBE_MS });
    try {
      const me = await client.getCurrentUser();
      if (me.login.toLowerCase() !== bot.username.toLowerCase()) {
        lines.push({
          status: 'FAIL',
          check,
          detail: `${variable} belongs to ${me.login}, not to ${bot.username}`,
          fix: `use ${bot.username}'s token, or set BOT_${account.toUpperCase()}_USERNAME=${me.login}`,
        });
        continue;
      }
      lines.push({ status: 'ok', check, detail: `${variable} is ${me.login}'s and valid (scope read:user)` });
    } catch (err) {
      lines.push({ status: 'FAIL', check, ...forgeFailure(err, variable, bot.username) });
      continue;
    }
    for (const full of repos) lines.push(...(await checkBotOnRepository(client, config, account, bot.username, full)));
  }
  if (repos.length === 0) {
    lines.push({
      status: 'info',
      check: 'repositories',
      detail: 'no repository named in the configuration: the bots’ rights were not checked',
      fix: 'run baton doctor --repo OWNER/REPO',
    });
  }
  return lines;
}

/**
 * GitHub's bot tokens, when GITHUB_URL is set: each must be valid and belong to the bot login the
 * pipeline knows (BOT_*_USERNAME), or the bot's own comments would start stages again.
 */
export async function checkGitHub(config: Config, io: CommandIo): Promise<Line[]> {
  const { apiUrl, tokens, webhookSecret, app } = config.github;
  if (!apiUrl) return [];
  const lines = await checkNamedForge(config, {
    forge: 'github',
    webhookSecret,
    secretDetail: 'GITHUB_WEBHOOK_SECRET is set: unsigned GitHub deliveries get 401',
    tokens,
    // The App's bots are checked below.
    ...(app ? { accounts: Object.keys(config.bots).filter((a) => tokens[a as 'dev' | 'review']) } : {}),
    client: (token) => createGitHubClient({ apiUrl, token, fetch: io.fetch, timeoutMs: PROBE_MS }),
  });
  if (app) lines.push(...(await checkGitHubApp(config, io, app)));
  return lines;
}

/** The GitHub App (GITHUB_APP_ID): GitHub takes its JWT, its webhook points at baton, it subscribes to the pipeline's events. */
async function checkGitHubApp(config: Config, io: CommandIo, app: { id: string; privateKey: string }): Promise<Line[]> {
  const auth = createGitHubAppAuth({
    apiUrl: config.github.apiUrl!,
    appId: app.id,
    privateKey: app.privateKey,
    fetch: io.fetch,
    timeoutMs: PROBE_MS,
  });
  let identity: GitHubAppIdentity;
  try {
    identity = await auth.identity();
  } catch (err) {
    const refused = err instanceof ForgeError && err.status === 401;
    return [
      {
        status: 'FAIL',
        check: 'github app',
        detail: refused ? `GitHub refuses the App's JWT (401 ${err.forgeMessage ?? ''})`.trim() : (err as Error).message,
        fix: refused
          ? "GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY must be the same App's (the .pem from its settings), and this machine's clock right"
          : 'check GITHUB_URL and that GitHub answers from here',
      },
    ];
  }
  const settings = `${config.github.url}/settings/apps/${identity.slug}`;
  const lines: Line[] = [
    { status: 'ok', check: 'github app', detail: `GITHUB_APP_ID is the App ${identity.slug}: the dev bot acts as ${identity.login}` },
  ];
  const wanted = config.publicUrl ? `${config.publicUrl}/webhook/github` : undefined;
  try {
    const hook = await auth.hookConfig();
    if (wanted && hook.url !== wanted)
      lines.push({
        status: 'FAIL',
        check: 'github app webhook',
        detail: `the App's webhook is ${hook.url || '(none)'}, not ${wanted}`,
        fix: `run baton connect github:OWNER/REPO, or set it in ${settings}`,
      });
    else lines.push({ status: 'ok', check: 'github app webhook', detail: `the App delivers to ${hook.url || '(none)'}` });
  } catch (err) {
    lines.push({ status: 'FAIL', check: 'github app webhook', detail: (err as Error).message });
  }
  const missing = forgeWebhookEvents('github', config.pipeline).filter((e) => !identity.events.includes(e));
  lines.push(
    missing.length > 0
      ? {
          status: 'FAIL',
          check: 'github app events',
          detail: `the App does not subscribe to ${missing.join(', ')}`,
          fix: `tick them under "Permissions & events" in ${settings}`,
        }
      : { status: 'ok', check: 'github app events', detail: `the App subscribes to ${identity.events.join(', ')}` },
  );
  return lines;
}

/**
 * GitLab's bot tokens, when GITLAB_URL is set: the same checks as GitHub's (`GET /api/v4/user`
 * with each token), and the hook's secret token.
 */
export async function checkGitLab(config: Config, io: CommandIo): Promise<Line[]> {
  const { url, tokens, webhookSecret } = config.gitlab;
  if (!url) return [];
  return checkNamedForge(config, {
    forge: 'gitlab',
    webhookSecret,
    secretDetail: 'GITLAB_WEBHOOK_SECRET is set: deliveries without that X-Gitlab-Token get 401',
    tokens,
    client: (token) => createGitLabClient({ rootUrl: url, token, fetch: io.fetch, timeoutMs: PROBE_MS }),
  });
}

async function checkNamedForge(
  config: Config,
  forge: {
    forge: 'github' | 'gitlab';
    webhookSecret: string | undefined;
    secretDetail: string;
    tokens: { dev?: string; review?: string };
    /** The accounts whose tokens are checked. @default every bot */
    accounts?: string[];
    client: (token: string) => ForgeClient;
  },
): Promise<Line[]> {
  const prefix = forge.forge.toUpperCase();
  const guide = `docs/${forge.forge}.md`;
  const lines: Line[] = [
    forge.webhookSecret
      ? { status: 'ok', check: `${forge.forge} webhook secret`, detail: forge.secretDetail }
      : {
          status: 'FAIL',
          check: `${forge.forge} webhook secret`,
          detail: `${prefix}_WEBHOOK_SECRET is not set`,
          fix: `set it (${guide})`,
        },
  ];
  for (const [account, bot] of Object.entries(config.bots)) {
    if (forge.accounts && !forge.accounts.includes(account)) continue;
    const variable = `${prefix}_${account.toUpperCase()}_TOKEN`;
    const check = `${forge.forge} bot ${account}`;
    const token = forge.tokens[account as 'dev' | 'review'];
    if (!token) {
      lines.push({ status: 'FAIL', check, detail: `${variable} is not set`, fix: `give the machine user’s token (${guide})` });
      continue;
    }
    try {
      const me = await forge.client(token).getCurrentUser();
      if (me.login.toLowerCase() !== bot.username.toLowerCase()) {
        lines.push({
          status: 'FAIL',
          check,
          detail: `${variable} belongs to ${me.login}, not to ${bot.username}`,
          fix: `use ${bot.username}'s token, or set BOT_${account.toUpperCase()}_USERNAME=${me.login}`,
        });
      } else lines.push({ status: 'ok', check, detail: `${variable} is ${me.login}'s and valid` });
    } catch (err) {
      lines.push({ status: 'FAIL', check, ...forgeFailure(err, variable, bot.username) });
    }
  }
  return lines;
}

async function checkBotOnRepository(client: ForgeClient, config: Config, account: string, login: string, full: string): Promise<Line[]> {
  const [owner, repo] = full.split('/') as [string, string];
  const check = `bot ${account} on ${full}`;
  try {
    const repository = await client.getRepository(owner, repo);
    const writing = await client.issueWriteAccess(owner, repo);
    if (!writing.allowed) {
      return [
        {
          status: 'FAIL',
          check,
          detail: `cannot comment: ${writing.reason}`,
          fix: `give the token the write:issue scope, and ${login} access to ${full}`,
        },
      ];
    }
    const lines: Line[] = [];
    if (repository.archived)
      lines.push({
        status: 'FAIL',
        check,
        detail: `${full} is archived: nothing can be posted there`,
        fix: 'unarchive it, or remove it from the configuration',
      });
    if (account === 'dev' && !repository.permissions.push) {
      lines.push({
        status: 'warn',
        check,
        detail: `${login} can read and comment but not push`,
        fix: `give ${login} write access to ${full}`,
      });
    } else {
      lines.push({
        status: 'ok',
        check,
        detail: `${login} can read and comment${repository.permissions.push ? ', and push' : ''} (scopes read:repository, write:issue)`,
      });
    }
    if (account === 'dev' && config.webhooks.requireWritePermission && !repository.permissions.admin) {
      lines.push({
        status: 'FAIL',
        check,
        detail: 'webhooks.requireWritePermission asks Gitea for each sender’s permission, which only a repository admin may',
        fix: `give ${login} admin access to ${full}, or turn webhooks.requireWritePermission off (docs/troubleshooting.md#permission-failures)`,
      });
    }
    return lines;
  } catch (err) {
    return [{ status: 'FAIL', check, ...forgeFailure(err, `GITEA_${account.toUpperCase()}_TOKEN`, login, full) }];
  }
}

function forgeFailure(err: unknown, variable: string, login: string, full?: string): { detail: string; fix?: string } {
  if (!(err instanceof ForgeError)) return { detail: (err as Error).message };
  if (err.status === 401) return { detail: `the forge rejects ${variable} (401)`, fix: `make a new token for ${login}` };
  if (err.status === 403 && /scope/i.test(err.forgeMessage ?? ''))
    return {
      detail: `the forge refuses: ${err.forgeMessage}`,
      fix: `make a token for ${login} with the scopes read:user, read:repository, write:issue`,
    };
  if (err.status === 404 && full) return { detail: `${login} cannot see ${full}`, fix: `add ${login} as a collaborator of ${full}` };
  if (err.kind === 'network' || err.kind === 'timeout')
    return { detail: err.message, fix: 'check GITEA_URL and that the forge answers from here' };
  return { detail: err.message };
}

/** Signatures are required: a secret from the environment or the one serve generated, or an explicit opt-out. */
function webhookSecretLine(config: Config): Line {
  const check = 'webhook secret';
  if (config.gitea.webhookSecret) {
    const from = config.gitea.webhookSecretFile
      ? `generated by baton serve, in ${config.gitea.webhookSecretFile}`
      : 'WEBHOOK_SECRET is set';
    return { status: 'ok', check, detail: `${from}: unsigned deliveries are refused` };
  }
  if (config.webhooks.allowUnsigned) {
    return {
      status: 'warn',
      check,
      detail: 'no webhook secret and webhooks.allowUnsigned is true: anyone who can reach baton can send it forged deliveries',
      fix: 'turn webhooks.allowUnsigned off; baton serve then generates a secret (or set WEBHOOK_SECRET), and run baton connect --recreate',
    };
  }
  return {
    status: 'warn',
    check,
    detail: 'no webhook secret yet: baton serve generates one in the data directory at its next start; until then every delivery gets 401',
    fix: 'start baton serve once (or set WEBHOOK_SECRET, e.g. openssl rand -hex 32), then run baton connect OWNER/REPO',
  };
}
