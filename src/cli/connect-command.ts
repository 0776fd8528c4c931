import { parseArgs } from 'node:util';
import type { Config } from '../server/index.js';
import { createGiteaClient, ForgeError, missingLabels, planHook } from '../forge/index.js';
import { isAllowed } from '../ingress/index.js';
import { pipelineLabels, webhookEventsFor } from '../pipeline/index.js';
import { parseRepositoryName, REPOSITORY_NAME_RULE } from '../repositories/index.js';
import { UsageError } from './args.js';
import { type CommandIo, visibleIo } from './io.js';
import { isPrivateOrLoopbackUrl } from './network.js';

const USAGE = 'usage: baton connect OWNER/REPO [--dry-run] [--recreate]';

export const CONNECT_HELP = `${USAGE}

Makes a repository on the forge (GITEA_URL) ready for baton, through the forge's API:
  - its webhook: PUBLIC_URL/webhook/gitea, JSON, signed with WEBHOOK_SECRET (or the repository's
    own secret from webhooks.repositories), active, with the events the pipeline listens to;
    created, or edited when it differs;
  - the labels the pipeline's triggers name, created when missing;
  - the bot accounts: each token belongs to its bot, which can read the repository and comment.
Running it again changes nothing that is already right.

Options:
  --dry-run    print what would change, change nothing
  --recreate   delete baton's webhook and create it again: the forge never shows a webhook's
               secret, so this is how a changed WEBHOOK_SECRET reaches it
  -h, --help   show this help

Webhooks need a repository admin: GITEA_ADMIN_TOKEN (used by this command only), else the dev
bot's token. Exit code 0 when the repository is ready, 1 when something is not.`;

type Mark = 'ok' | 'change' | 'warn' | 'FAIL';
type GiteaClient = ReturnType<typeof createGiteaClient>;

/** What every step of `baton connect` works with: the repository, the admin's client and the report. */
interface Connect {
  io: CommandIo;
  config: Config;
  owner: string;
  repo: string;
  full: string;
  dryRun: boolean;
  recreate: boolean | undefined;
  admin: GiteaClient;
  adminName: string;
  client: (token: string) => GiteaClient;
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
  const { owner, repo, dryRun } = args;
  const full = `${owner}/${repo}`;

  const forgeUrl = config.gitea.url;
  if (!forgeUrl) {
    io.err('baton connect: GITEA_URL is not set: the Gitea or Forgejo base URL, e.g. https://git.example.com');
    return 1;
  }
  const adminToken = config.gitea.adminToken ?? config.bots.dev.token;
  if (!adminToken) {
    io.err('baton connect: neither GITEA_ADMIN_TOKEN nor GITEA_DEV_TOKEN is set: a repository admin’s token is needed for the webhook');
    return 1;
  }
  let failures = 0;
  const client = (token: string) => createGiteaClient({ baseUrl: forgeUrl, token, fetch: io.fetch });
  const run: Connect = {
    io,
    config,
    owner,
    repo,
    full,
    dryRun,
    recreate: args.recreate,
    admin: client(adminToken),
    adminName: config.gitea.adminToken ? 'GITEA_ADMIN_TOKEN' : 'GITEA_DEV_TOKEN',
    client,
    say: (mark, what, detail) => {
      if (mark === 'FAIL') failures++;
      io.out(`${mark.padEnd(6)} ${what.padEnd(11)} ${detail}`);
    },
    verb: (done, planned) => (dryRun ? planned : done),
  };
  io.out(`${dryRun ? 'plan for' : 'connecting'} ${full} on ${forgeUrl}${dryRun ? ' (dry run: nothing is changed)' : ''}`);

  if (!(await checkRepository(run))) return 1;
  if (!isAllowed(config.webhooks.allow, owner, repo)) {
    run.say(
      'FAIL',
      'allowlist',
      `${full} is not in webhooks.allow (${config.webhooks.allow.join(', ')}): baton would refuse its deliveries; add it there`,
    );
  }
  await connectWebhook(run);
  await connectLabels(run);
  // The bots: their tokens are theirs, and they can read and comment here.
  for (const [account, bot] of Object.entries(config.bots)) await checkBot(run, account, bot);

  io.out(failures ? `${full} is not ready: ${failures} problem${failures === 1 ? '' : 's'} above` : `${full} is ready`);
  return failures ? 1 : 0;
}

function parseConnectArgs(
  argv: string[],
): { help: true } | { help?: false; owner: string; repo: string; dryRun: boolean; recreate?: boolean } {
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
  const name = parseRepositoryName(positionals[0]!);
  if (!name) throw new UsageError(`baton connect: the repository ${REPOSITORY_NAME_RULE}, got "${positionals[0]}"\n${USAGE}`);
  return { owner: name.owner, repo: name.repo, dryRun: values['dry-run'] === true, recreate: values.recreate };
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
        `${adminUser} (${adminName}) is not an admin of ${full}, and webhooks need one: give ${adminUser} admin access, or set GITEA_ADMIN_TOKEN to an admin's token (scopes write:repository, write:issue)`,
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
async function connectWebhook(run: Connect): Promise<void> {
  const { config, admin, owner, repo, full, adminName, say, verb, dryRun } = run;
  const secret = config.webhooks.repositories[full.toLowerCase()]?.secret ?? config.gitea.webhookSecret;
  const events = webhookEventsFor(config.pipeline);
  if (!config.publicUrl) {
    say('FAIL', 'webhook', 'PUBLIC_URL is not set: the base URL at which the forge reaches baton, e.g. https://baton.example.com');
    return;
  }
  if (!secret) {
    say(
      'FAIL',
      'webhook',
      'no webhook secret: start baton serve once (it generates one in its data directory, which connect then uses) or set WEBHOOK_SECRET (e.g. openssl rand -hex 32) for baton serve and here',
    );
    return;
  }
  if (events.length === 0) {
    say('warn', 'webhook', 'the pipeline has no stage a forge event starts: no webhook needed');
    return;
  }
  const url = `${config.publicUrl}/webhook/gitea`;
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
    if (isPrivateOrLoopbackUrl(config.publicUrl)) {
      say(
        'warn',
        'webhook',
        `${config.publicUrl} is a loopback or private address: Gitea delivers there only if its admin allows it in ALLOWED_HOST_LIST (see docs/gitea.md)`,
      );
    }
  } catch (err) {
    say('FAIL', 'webhook', forgeProblem(err, full, adminName));
  }
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
async function checkBot(run: Connect, account: string, bot: Config['bots'][keyof Config['bots']]): Promise<void> {
  const { config, owner, repo, full, say } = run;
  const variable = `GITEA_${account.toUpperCase()}_TOKEN`;
  const what = `bot ${account}`;
  if (!bot.token) {
    say('FAIL', what, `${variable} is not set: the ${account} bot cannot act`);
    return;
  }
  const botClient = run.client(bot.token);
  try {
    const me = await botClient.getCurrentUser();
    if (me.login.toLowerCase() !== bot.username.toLowerCase()) {
      say(
        'FAIL',
        what,
        `${variable} belongs to ${me.login}, not to ${bot.username}: use ${bot.username}'s token, or set BOT_${account.toUpperCase()}_USERNAME=${me.login}`,
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
    if (account === 'dev' && config.webhooks.requireWritePermission && !repository.permissions.admin && !me.isAdmin) {
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
