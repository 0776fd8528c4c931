import { ForgeError, type ForgeClient, type GitHubAppAuth, type GitHubAppIdentity } from '../forge/index.js';

// `baton connect github:OWNER/REPO` when the dev bot is a GitHub App (GITHUB_APP_ID): the App has
// one webhook for every installation, set in the App's own settings (`/app/hook/config`, which
// the App's JWT may change; the events it subscribes to only a person can change), and it reaches
// a repository it is installed on, with the installation's permissions.

type Mark = 'ok' | 'change' | 'warn' | 'FAIL';

export interface AppConnect {
  app: GitHubAppAuth;
  client: ForgeClient;
  /** GITHUB_URL, for the App's settings and installation pages. */
  githubUrl: string;
  owner: string;
  repo: string;
  full: string;
  dryRun: boolean;
  recreate: boolean | undefined;
  say: (mark: Mark, what: string, detail: string) => void;
  verb: (done: string, planned: string) => string;
}

/** The App, once it is known to be installed on the repository; undefined (said why) when nothing else can be done. */
export async function checkAppInstallation(run: AppConnect): Promise<GitHubAppIdentity | undefined> {
  const { app, client, owner, repo, full, say } = run;
  let identity: GitHubAppIdentity;
  try {
    identity = await app.identity();
  } catch (err) {
    say('FAIL', 'app', appProblem(err));
    return undefined;
  }
  try {
    const repository = await client.getRepository(owner, repo);
    if (repository.archived) {
      say('FAIL', 'repository', `${full} is archived: GitHub refuses every change to it; unarchive it first`);
      return undefined;
    }
    say('ok', 'repository', `${full}, the App ${identity.slug} is installed (it acts as ${identity.login})`);
    return identity;
  } catch (err) {
    if (err instanceof ForgeError && err.status === 404) {
      say(
        'FAIL',
        'repository',
        `the App ${identity.slug} is not installed on ${full}: install it there (${run.githubUrl}/apps/${identity.slug}/installations/new)`,
      );
    } else say('FAIL', 'repository', appProblem(err));
    return undefined;
  }
}

/** The App's webhook: its URL and secret set through `/app/hook/config`; its events checked, since only its settings page changes them. */
export async function connectAppWebhook(
  run: AppConnect,
  identity: GitHubAppIdentity,
  wanted: { url: string; secret: string; events: string[] },
): Promise<void> {
  const { app, say, verb, dryRun } = run;
  const settings = `${run.githubUrl}/settings/apps/${identity.slug}`;
  try {
    const current = await app.hookConfig();
    const changes = [
      ...(current.url !== wanted.url ? [`url ${current.url || '(none)'} → ${wanted.url}`] : []),
      ...(current.contentType !== 'json' ? [`content type ${current.contentType || '(none)'} → json`] : []),
    ];
    // GitHub never shows the secret: it is set with a new URL, when there is none, or on --recreate.
    const setSecret = changes.length > 0 || !current.hasSecret || run.recreate === true;
    if (setSecret) changes.push(current.hasSecret ? 'secret set again' : 'secret set');
    if (changes.length === 0) {
      say(
        'ok',
        'webhook',
        `the App's webhook is ${wanted.url} (its secret cannot be read back: if deliveries get 401, run with --recreate)`,
      );
    } else {
      if (!dryRun) await app.updateHookConfig({ url: wanted.url, contentType: 'json', ...(setSecret ? { secret: wanted.secret } : {}) });
      say('change', 'webhook', `${verb('updated', 'would update')} the App's webhook: ${changes.join('; ')}`);
    }
  } catch (err) {
    say('FAIL', 'webhook', appProblem(err));
  }
  const missing = wanted.events.filter((e) => !identity.events.includes(e));
  if (missing.length > 0) {
    say(
      'FAIL',
      'events',
      `the App does not subscribe to ${missing.join(', ')}: tick them under "Permissions & events" in ${settings} (GitHub lets only its settings change them)`,
    );
  } else say('ok', 'events', `the App subscribes to ${wanted.events.join(', ')}`);
}

/** The App as a bot: what its installation lets it do on the repository. */
export async function checkAppBot(run: AppConnect, account: string, identity: GitHubAppIdentity): Promise<void> {
  const { client, owner, repo, full, say } = run;
  const what = `bot ${account}`;
  try {
    const writing = await client.issueWriteAccess(owner, repo);
    if (!writing.allowed) {
      say('FAIL', what, `${identity.login} cannot comment on ${full}: ${writing.reason}`);
      return;
    }
    const { push } = (await client.getRepository(owner, repo)).permissions;
    if (account === 'dev' && !push)
      say(
        'warn',
        what,
        `${identity.login} can read and comment, but not push: give the App contents: write for the stages that change code`,
      );
    else say('ok', what, `${identity.login} (the App) can read and comment${push ? ', and push' : ''}`);
  } catch (err) {
    say('FAIL', what, appProblem(err));
  }
}

function appProblem(err: unknown): string {
  if (!(err instanceof ForgeError)) return (err as Error).message;
  if (err.status === 401)
    return `GitHub refuses the App's JWT (401${err.forgeMessage ? `: ${err.forgeMessage}` : ''}): GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY must be the same App's, and this machine's clock right`;
  return err.message;
}
