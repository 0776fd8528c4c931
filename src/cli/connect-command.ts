import { parseArgs } from 'node:util';
import type { Config } from '../server/index.js';
import { checkAppBot, checkAppInstallation, connectAppWebhook, type AppConnect } from './connect-github-app.js';
import {
  createGitHubAppAuth,
  createGitHubAppClient,
  createGitHubClient,
  githubCredentialOf,
  createGitLabClient,
  createGiteaClient,
  ForgeError,
  missingLabels,
  planHook,
  type ForgeClient,
} from '../forge/index.js';
import { isAllowed } from '../ingress/index.js';
import { pipelineLabels, webhookEventsFor } from '../pipeline/index.js';
import { parseForgeRepository } from '../repositories/index.js';
import { UsageError } from './args.js';
import { type CommandIo, visibleIo } from './io.js';
import { isPrivateOrLoopbackUrl } from './network.js';

const USAGE = 'usage: baton connect [github:|gitlab:]OWNER/REPO [--dry-run] [--recreate]';

export const CONNECT_HELP = `${USAGE}

Makes a repository ready for baton, through its forge's API: on Gitea or Forgejo (GITEA_URL) for
OWNER/REPO, on GitHub (GITHUB_URL) for github:OWNER/REPO, on GitLab (GITLAB_URL) for
gitlab:NAMESPACE/PROJECT (the namespace with its subgroups: gitlab:acme/platform/app):
  - its webhook: PUBLIC_URL/webhook/<forge>, JSON, signed with the forge's webhook secret
    (WEBHOOK_SECRET or the repository's own from webhooks.repositories on Gitea,
    GITHUB_WEBHOOK_SECRET, GITLAB_WEBHOOK_SECRET), active, with the events the pipeline listens
    to; created, or edited when it differs;
  - the labels the pipeline's triggers name, created when missing;
  - the bot accounts: each token belongs to its bot, which can read the repository and comment.
Running it again changes nothing that is already right.

Options:
  --dry-run    print what would change, change nothing
  --recreate   delete baton's webhook and create it again: the forge never shows a webhook's
               secret, so this is how a changed WEBHOOK_SECRET reaches it
  -h, --help   show this help

Webhooks need a repository admin: on Gitea GITEA_ADMIN_TOKEN (used by this command only), else
the dev bot's token; on GitHub and GitLab the dev bot's token (GitHub: admin of the repository;
GitLab: Maintainer). With a GitHub App as the dev bot (GITHUB_APP_ID) there is no repository
webhook: the App's own webhook is set instead (its URL and secret), the App must be installed on
the repository, and the events it subscribes to are checked (only its settings page changes
them). Exit code 0 when the repository is ready, 1 when something is not.`;

type Mark = 'ok' | 'change' | 'warn' | 'FAIL';
type ConnectForge = 'gitea' | 'github' | 'gitlab';

/** The forge's own webhook event names for Gitea's, which the pipeline's triggers are written in. */
const HOOK_EVENTS_OF: Record<'github' | 'gitlab', Readonly<Record<string, string>>> = {
  // GitHub's webhook events: "Webhook events and payloads" (issues carries labelled too).
  github: {
    issues_only: 'issues',
    issues: 'issues',
    issue_label: 'issues',
    issue_comment: 'issue_comment',
    pull_request_comment: 'issue_comment',
    pull_request_only: 'pull_request',
    pull_request: 'pull_request',
    pull_request_label: 'pull_request',
    pull_request_sync: 'pull_request',
    pull_request_review: 'pull_request_review',
    release: 'release',
    push: 'push',
  },
  // GitLab's project hook flags ("Project webhooks" API): approvals come as merge request events.
  gitlab: {
    issues_only: 'issues_events',
    issues: 'issues_events',
    issue_label: 'issues_events',
    issue_comment: 'note_events',
    pull_request_comment: 'note_events',
    pull_request_only: 'merge_requests_events',
    pull_request: 'merge_requests_events',
    pull_request_label: 'merge_requests_events',
    pull_request_sync: 'merge_requests_events',
    pull_request_review: 'merge_requests_events',
    release: 'releases_events',
    push: 'push_events',
  },
};

/** The pipeline's webhook events (Gitea's names) in the forge's own terms. */
function translatedEvents(forge: 'github' | 'gitlab', events: readonly string[]): string[] {
  const names = HOOK_EVENTS_OF[forge];
  return [...new Set(events.map((e) => names[e] ?? e))].sort();
}

/** The webhook events the pipeline needs from GitHub or GitLab, in the forge's names. */
export function forgeWebhookEvents(forge: 'github' | 'gitlab', pipeline: Parameters<typeof webhookEventsFor>[0]): string[] {
  return translatedEvents(forge, webhookEventsFor(pipeline));
}

/** One forge as `baton connect` works with it: where it is, its tokens' names and its webhook. */
interface ForgeSetup {
  forge: ConnectForge;
  /** The forge's root (GITEA_URL, GITHUB_URL, GITLAB_URL), or undefined when it is not configured. */
  url: string | undefined;
  urlVariable: string;
  /** The prefix of its token variables (`GITEA` in GITEA_DEV_TOKEN). */
  prefix: string;
  tokens: { dev?: string; review?: string };
  adminToken: string | undefined;
  adminName: string;
  /** What to give the admin token's user when it is not an admin. */
  adminHint: (user: string) => string;
  secret: (full: string) => string | undefined;
  secretHint: string;
  events: (giteaEvents: readonly string[]) => string[];
  /** Why a loopback or private PUBLIC_URL may get no deliveries from this forge. */
  privateUrlHint: string;
  client: (token: string) => ForgeClient;
}

function forgeSetup(forge: ConnectForge, config: Config, io: CommandIo): ForgeSetup {
  if (forge === 'github') {
    const { apiUrl, tokens, webhookSecret } = config.github;
    return {
      forge,
      url: apiUrl,
      urlVariable: 'GITHUB_URL',
      prefix: 'GITHUB',
      tokens,
      adminToken: tokens.dev,
      adminName: 'GITHUB_DEV_TOKEN',
      adminHint: (user) =>
        `give ${user} the Admin role on the repository, with a token that may manage webhooks (fine-grained: Webhooks read and write; classic: admin:repo_hook)`,
      secret: () => webhookSecret,
      secretHint: 'set GITHUB_WEBHOOK_SECRET (e.g. openssl rand -hex 32) for baton serve and here',
      events: (events) => translatedEvents('github', events),
      privateUrlHint: 'github.com cannot deliver there, and GitHub Enterprise Server only within its own network',
      client: (token) => createGitHubClient({ apiUrl: apiUrl!, token, fetch: io.fetch }),
    };
  }
  if (forge === 'gitlab') {
    const { url, tokens, webhookSecret } = config.gitlab;
    return {
      forge,
      url,
      urlVariable: 'GITLAB_URL',
      prefix: 'GITLAB',
      tokens,
      adminToken: tokens.dev,
      adminName: 'GITLAB_DEV_TOKEN',
      adminHint: (user) => `give ${user} the Maintainer role (40) in the project, or make the hook by hand (docs/gitlab.md)`,
      secret: () => webhookSecret,
      secretHint: 'set GITLAB_WEBHOOK_SECRET (e.g. openssl rand -hex 32) for baton serve and here',
      events: (events) => translatedEvents('gitlab', events),
      privateUrlHint:
        'GitLab delivers there only if its admin allows requests to the local network from webhooks (Admin area, Settings, Network, Outbound requests)',
      client: (token) => createGitLabClient({ rootUrl: url!, token, fetch: io.fetch }),
    };
  }
  const url = config.gitea.url;
  return {
    forge,
    url,
    urlVariable: 'GITEA_URL',
    prefix: 'GITEA',
    tokens: { dev: config.bots.dev.token, review: config.bots.review.token },
    adminToken: config.gitea.adminToken ?? config.bots.dev.token,
    adminName: config.gitea.adminToken ? 'GITEA_ADMIN_TOKEN' : 'GITEA_DEV_TOKEN',
    adminHint: (user) => `give ${user} admin access, or set GITEA_ADMIN_TOKEN to an admin's token (scopes write:repository, write:issue)`,
    secret: (full) => config.webhooks.repositories[full.toLowerCase()]?.secret ?? config.gitea.webhookSecret,
    secretHint:
      'start baton serve once (it generates one in its data directory, which connect then uses) or set WEBHOOK_SECRET (e.g. openssl rand -hex 32) for baton serve and here',
    events: (events) => [...events],
    privateUrlHint: 'Gitea delivers there only if its admin allows it in ALLOWED_HOST_LIST (see docs/gitea.md)',
    client: (token) => createGiteaClient({ baseUrl: url!, token, fetch: io.fetch }),
  };
}

/** What every step of `baton connect` works with: the repository, the admin's client and the report. */
interface Connect {
  io: CommandIo;
  config: Config;
  setup: ForgeSetup;
  owner: string;
  repo: string;
  full: string;
  dryRun: boolean;
  recreate: boolean | undefined;
  admin: ForgeClient;
  adminName: string;
  client: (token: string) => ForgeClient;
  say: (mark: Mark, what: string, detail: string) => void;
  /** The word for what was done, or what would be in a dry run. */
  verb: (done: string, planned: string) => string;
}

/** `baton connect OWNER/REPO`: webhook, labels and bot access of one repository, idempotent. */
export async function connectCommand(argv: string[], rawIo: CommandIo, config: Config): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  const args = parseConnectArgs(argv);
  if (args.help) {
    io.out(CONNECT_HELP);
    return 0;
  }
  const { forge, owner, repo, dryRun } = args;
  const full = `${owner}/${repo}`;
  // Gitea's repositories keep their bare names; the others are named with their forge, as in run keys.
  const shown = forge === 'gitea' ? full : `${forge}:${full}`;
  const setup = forgeSetup(forge, config, io);
  const forgeUrl = setup.url;
  if (!forgeUrl) {
    io.err(
      forge === 'gitea'
        ? 'baton connect: GITEA_URL is not set: the Gitea or Forgejo base URL, e.g. https://git.example.com'
        : `baton connect: ${setup.urlVariable} is not set: ${forge}:${full} needs ${forge === 'github' ? 'https://github.com or your GitHub Enterprise Server root' : 'the GitLab root, e.g. https://gitlab.example.com'}`,
    );
    return 1;
  }
  const adminToken = setup.adminToken;
  // A GitHub App as the dev bot: its webhook is the App's own, and it acts with installation tokens.
  const { app: appSettings, apiUrl: githubApi } = config.github;
  const app =
    forge === 'github' && appSettings && githubApi
      ? createGitHubAppAuth({ apiUrl: githubApi, appId: appSettings.id, privateKey: appSettings.privateKey, fetch: io.fetch })
      : undefined;
  if (!adminToken && !app) {
    io.err(
      forge === 'gitea'
        ? 'baton connect: neither GITEA_ADMIN_TOKEN nor GITEA_DEV_TOKEN is set: a repository admin’s token is needed for the webhook'
        : `baton connect: ${setup.adminName} is not set: the dev bot's token makes the webhook`,
    );
    return 1;
  }
  let failures = 0;
  const client = setup.client;
  const run: Connect = {
    io,
    config,
    setup,
    owner,
    repo,
    full,
    dryRun,
    recreate: args.recreate,
    admin: app ? createGitHubAppClient(app, { apiUrl: githubApi!, fetch: io.fetch }) : client(adminToken!),
    adminName: app ? 'GITHUB_APP_ID' : setup.adminName,
    client,
    say: (mark, what, detail) => {
      if (mark === 'FAIL') failures++;
      io.out(`${mark.padEnd(6)} ${what.padEnd(11)} ${detail}`);
    },
    verb: (done, planned) => (dryRun ? planned : done),
  };
  io.out(`${dryRun ? 'plan for' : 'connecting'} ${shown} on ${forgeUrl}${dryRun ? ' (dry run: nothing is changed)' : ''}`);

  const appRun: AppConnect | undefined = app && {
    app,
    client: run.admin,
    githubUrl: config.github.url!,
    owner,
    repo,
    full,
    dryRun,
    recreate: args.recreate,
    say: run.say,
    verb: run.verb,
  };
  const identity = appRun ? await checkAppInstallation(appRun) : undefined;
  if (appRun ? !identity : !(await checkRepository(run))) return 1;
  if (!isAllowed(config.webhooks.allow, owner, repo)) {
    run.say(
      'FAIL',
      'allowlist',
      `${full} is not in webhooks.allow (${config.webhooks.allow.join(', ')}): baton would refuse its deliveries; add it there`,
    );
  }
  if (appRun && identity) {
    const wanted = webhookWanted(run);
    if (wanted) {
      await connectAppWebhook(appRun, identity, wanted);
      warnPrivateUrl(run);
    }
  } else await connectWebhook(run);
  await connectLabels(run);
  // The bots: their tokens are theirs (or the App's installation), and they can read and comment here.
  for (const [account, bot] of Object.entries(config.bots)) {
    const credential = forge === 'github' ? githubCredentialOf(config.github, account) : undefined;
    if (appRun && identity && credential && 'app' in credential) await checkAppBot(appRun, account, identity);
    else await checkBot(run, account, bot.username, setup.tokens[account as 'dev' | 'review']);
  }

  io.out(failures ? `${shown} is not ready: ${failures} problem${failures === 1 ? '' : 's'} above` : `${shown} is ready`);
  return failures ? 1 : 0;
}

function parseConnectArgs(
  argv: string[],
): { help: true } | { help?: false; forge: ConnectForge; owner: string; repo: string; dryRun: boolean; recreate?: boolean } {
  let values: { 'dry-run'?: boolean; recreate?: boolean; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { 'dry-run': { type: 'boolean' }, recreate: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    }));
  } catch (err) {
    throw new UsageError(`baton connect: ${(err as Error).message}\n${USAGE}`);
  }
  if (values.help) return { help: true };
  if (positionals.length !== 1) throw new UsageError(`baton connect needs one repository, OWNER/REPO\n${USAGE}`);
  const given = positionals[0]!;
  // A GitLab project may sit in a subgroup: its namespace (the owner) is as deep as GitLab allows.
  const name = parseForgeRepository(given);
  if ('problem' in name) throw new UsageError(`baton connect: the repository ${name.problem}, got "${given}"\n${USAGE}`);
  return {
    forge: name.forge ?? 'gitea',
    owner: name.owner,
    repo: name.repo,
    dryRun: values['dry-run'] === true,
    recreate: values.recreate,
  };
}

/** The repository, as the admin token sees it: false (said why) when nothing else can be done. */
async function checkRepository(run: Connect): Promise<boolean> {
  const { admin, owner, repo, full, adminName, say } = run;
  try {
    const adminUser = (await admin.getCurrentUser()).login;
    const repository = await admin.getRepository(owner, repo);
    if (repository.archived) {
      say('FAIL', 'repository', `${full} is archived: the forge refuses every change to it; unarchive it first`);
      return false;
    }
    if (!repository.permissions.admin) {
      say(
        'FAIL',
        'repository',
        `${adminUser} (${adminName}) is not an admin of ${full}, and webhooks need one: ${run.setup.adminHint(adminUser)}`,
      );
      return false;
    }
    say('ok', 'repository', `${full}, admin: ${adminUser} (${adminName})`);
    return true;
  } catch (err) {
    say('FAIL', 'repository', forgeProblem(err, full, adminName));
    return false;
  }
}

/** baton's webhook: created, edited, recreated or kept, as `planHook` says. */
/** The webhook baton needs (PUBLIC_URL/webhook/<forge>, its secret and events), or undefined (said why) when there is none to make. */
function webhookWanted(run: Connect): { url: string; secret: string; events: string[] } | undefined {
  const { config, setup, full, say } = run;
  const secret = setup.secret(full);
  const events = setup.events(webhookEventsFor(config.pipeline));
  if (!config.publicUrl) {
    say('FAIL', 'webhook', 'PUBLIC_URL is not set: the base URL at which the forge reaches baton, e.g. https://baton.example.com');
    return undefined;
  }
  if (!secret) {
    say('FAIL', 'webhook', `no webhook secret: ${setup.secretHint}`);
    return undefined;
  }
  if (events.length === 0) {
    say('warn', 'webhook', 'the pipeline has no stage a forge event starts: no webhook needed');
    return undefined;
  }
  return { url: `${config.publicUrl}/webhook/${setup.forge}`, secret, events };
}

async function connectWebhook(run: Connect): Promise<void> {
  const { admin, owner, repo, full, adminName, say, verb, dryRun } = run;
  const wanted = webhookWanted(run);
  if (!wanted) return;
  const { url, secret, events } = wanted;
  try {
    const plan = planHook(await admin.listHooks(owner, repo), url, events, { recreate: run.recreate });
    const described = `${url} (json, active, events: ${events.join(', ')})`;
    switch (plan.action) {
      case 'keep':
        say('ok', 'webhook', `${url} is up to date (its secret cannot be read back: if deliveries get 401, run with --recreate)`);
        break;
      case 'create':
        if (!dryRun) await admin.createHook(owner, repo, { url, secret, events });
        say('change', 'webhook', `${verb('created', 'would create')} ${described}`);
        break;
      case 'update':
        if (!dryRun) await admin.editHook(owner, repo, plan.hook.id, { url, events });
        say('change', 'webhook', `${verb('updated', 'would update')} hook ${plan.hook.id}: ${plan.changes.join('; ')}`);
        break;
      case 'recreate':
        if (!dryRun) {
          for (const hook of plan.hooks) await admin.deleteHook(owner, repo, hook.id);
          await admin.createHook(owner, repo, { url, secret, events });
        }
        say(
          'change',
          'webhook',
          `${verb('recreated', 'would recreate')} ${described} (${verb('deleted', 'deleting')} hook ${plan.hooks.map((h) => h.id).join(', ')})`,
        );
        break;
    }
    warnPrivateUrl(run);
  } catch (err) {
    say('FAIL', 'webhook', forgeProblem(err, full, adminName));
  }
}

function warnPrivateUrl(run: Connect): void {
  const { publicUrl } = run.config;
  if (publicUrl && isPrivateOrLoopbackUrl(publicUrl))
    run.say('warn', 'webhook', `${publicUrl} is a loopback or private address: ${run.setup.privateUrlHint}`);
}

/** The labels the triggers name, created when missing. */
async function connectLabels(run: Connect): Promise<void> {
  const { config, admin, owner, repo, full, adminName, say, verb, dryRun } = run;
  try {
    const wanted = pipelineLabels(config.pipeline);
    const missing = missingLabels(await admin.listRepoLabels(owner, repo), wanted);
    for (const label of wanted) {
      if (!missing.includes(label)) say('ok', 'label', label.name);
    }
    for (const label of missing) {
      if (!dryRun) await admin.createLabel(owner, repo, label);
      say('change', 'label', `${verb('created', 'would create')} ${label.name} (${label.description})`);
    }
  } catch (err) {
    say('FAIL', 'label', forgeProblem(err, full, adminName));
  }
}

/** One bot: its token is its own, and it can read and comment here (and, the dev bot, push). */
async function checkBot(run: Connect, account: string, username: string, token: string | undefined): Promise<void> {
  const { config, owner, repo, full, say } = run;
  const variable = `${run.setup.prefix}_${account.toUpperCase()}_TOKEN`;
  const what = `bot ${account}`;
  if (!token) {
    say('FAIL', what, `${variable} is not set: the ${account} bot cannot act`);
    return;
  }
  const botClient = run.client(token);
  try {
    const me = await botClient.getCurrentUser();
    if (me.login.toLowerCase() !== username.toLowerCase()) {
      say(
        'FAIL',
        what,
        `${variable} belongs to ${me.login}, not to ${username}: use ${username}'s token, or set BOT_${account.toUpperCase()}_USERNAME=${me.login}`,
      );
      return;
    }
    const repository = await botClient.getRepository(owner, repo);
    const writing = await botClient.issueWriteAccess(owner, repo);
    if (!writing.allowed) {
      say('FAIL', what, `${me.login} cannot comment on ${full}: ${writing.reason}`);
      return;
    }
    const canPush = repository.permissions.push;
    if (account === 'dev' && !canPush) {
      say('warn', what, `${me.login} can read and comment, but not push: give it write access for the stages that change code`);
    } else {
      say('ok', what, `${me.login} can read and comment${canPush ? ', and push' : ''}`);
    }
    // Gitea tells other users' permission to an admin only; GitHub to push access, GitLab to members.
    if (
      run.setup.forge === 'gitea' &&
      account === 'dev' &&
      config.webhooks.requireWritePermission &&
      !repository.permissions.admin &&
      !me.isAdmin
    ) {
      say(
        'FAIL',
        what,
        `webhooks.requireWritePermission asks Gitea for each sender's permission, which only a repository admin may: give ${me.login} admin access to ${full}`,
      );
    }
  } catch (err) {
    say('FAIL', what, forgeProblem(err, full, variable));
  }
}

/** A forge refusal in words that say what to change. */
function forgeProblem(err: unknown, full: string, tokenName: string): string {
  if (!(err instanceof ForgeError)) return (err as Error).message;
  if (err.status === 401) return `the forge rejects ${tokenName} (401): it is wrong, expired or revoked; make a new token`;
  if (err.status === 404) return `${full} does not exist, or ${tokenName}'s user cannot see it`;
  if (err.status === 403) return `the forge refuses (403): ${err.forgeMessage ?? 'forbidden'}`;
  return err.message;
}
