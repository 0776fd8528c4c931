import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));
const SECRET = 'chatops-test-webhook-secret';

/**
 * ChatOps in the whole app with the fake Gitea: a comment that starts with `@baton` is a command
 * from a person with write access, taken with a reaction and answered with a reply, through the
 * inbox and the outbox like every event.
 */
describe.each(STORE_KINDS)('ChatOps on $kind', ({ kind, create }) => {
  let t: TestStore;
  let gitea: FakeGitea;
  let app: TestApp | undefined;
  let issue: number;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    gitea = await createFakeGitea();
    gitea.addUser('alice');
    gitea.addUser('rita');
    gitea.addRepo('acme', 'app');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    gitea.addCollaborator('acme', 'app', 'rita', 'read');
    for (const login of ['claude-dev', 'claude-review']) {
      gitea.addUser(login, { token: `${login}-token` });
      gitea.addCollaborator('acme', 'app', login, 'admin');
    }
    issue = gitea.addIssue('acme', 'app', { title: 'Crash on start', author: 'alice' }).number;
    app = await startTestApp(t, {
      env: { GITEA_URL: gitea.url, GITEA_DEV_TOKEN: 'claude-dev-token', GITEA_REVIEW_TOKEN: 'claude-review-token', WEBHOOK_SECRET: SECRET },
    });
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await gitea?.close();
    await t?.cleanup().catch(() => {});
  });

  /** `author` comments `body` on the issue (in the fake Gitea) and Gitea delivers its webhook. */
  async function comment(author: string, body: string, options: { commentId?: number } = {}) {
    const id = options.commentId ?? gitea.addComment('acme', 'app', issue, { author, body }).id;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body, changed field by field
    const payload = fixtureJson('issue_comment-created.json') as Record<string, any>;
    payload.issue = { ...payload.issue, number: issue, state: 'open', labels: [], pull_request: null };
    payload.comment = { ...payload.comment, id, body, user: { ...payload.comment.user, login: author, username: author } };
    payload.repository = {
      ...payload.repository,
      name: 'app',
      full_name: 'acme/app',
      owner: { ...payload.repository.owner, login: 'acme' },
    };
    payload.sender = { ...payload.sender, login: author, username: author };
    const raw = toBody(payload);
    const response = await fetch(`${app!.url}/webhook/gitea`, {
      method: 'POST',
      headers: giteaHeaders(raw, { event: 'issue_comment', eventType: 'issue_comment', secret: SECRET }),
      body: raw,
    });
    expect(response.status).toBe(202);
    const { id: delivery } = (await response.json()) as { id: number };
    const row = await until(async () => {
      const r = await app!.app.store.db.selectFrom('inbox_deliveries').selectAll().where('id', '=', delivery).executeTakeFirst();
      return r?.status === 'processed' ? r : undefined;
    }, `delivery ${delivery} processed`);
    return { commentId: id, delivery: row };
  }

  const botComments = () => gitea.comments('acme', 'app', issue).filter((c) => c.author === 'claude-dev');
  /** The bot's reply that contains `text`, once the outbox has posted it. */
  const reply = (text: string) =>
    until(
      () => botComments().find((c) => c.body.includes(text)),
      `a reply with "${text}" (posted: ${JSON.stringify(botComments().map((c) => c.body.slice(0, 80)))})`,
      20_000,
    );
  const taken = (commentId: number) =>
    until(() => gitea.reactions(commentId).some((r) => r.user === 'claude-dev' && r.content === 'eyes'), 'the eyes reaction');

  it(
    'runs a stage with its text, cancels it, retries it and reports the status, each taken and answered',
    { timeout: 120_000 },
    async () => {
      const run = await comment('alice', '@baton run develop keep the old flag working');
      await taken(run.commentId);
      await reply('Started `develop`');
      const [develop] = await app!.app.runs.list({ stage: 'develop' });
      expect(develop).toMatchObject({ number: issue, payload: { arguments: 'keep the old flag working' } });
      expect(run.delivery.outcome).toBe('command');

      const cancel = await comment('alice', '@baton cancel');
      await taken(cancel.commentId);
      await reply(`Cancelled run ${develop!.id}`);
      expect((await app!.app.runs.get(develop!.id))!.status).toBe('cancelled');

      const retry = await comment('alice', '@Baton retry');
      await taken(retry.commentId);
      await reply(`Retrying run ${develop!.id}`);
      expect(['queued', 'provisioning', 'running']).toContain((await app!.app.runs.get(develop!.id))!.status);

      const status = await comment('alice', '@baton status');
      await taken(status.commentId);
      const table = await reply(`Status of #${issue}`);
      expect(table.body).toContain(`| ${develop!.id} | \`develop\``);
      // Nothing but commands was started: the comments did not also trigger a stage of their own.
      expect((await app!.app.runs.list()).map((r) => r.stage)).toEqual(['develop']);
    },
  );

  it('answers a read-only user that it may not, and runs nothing', async () => {
    const { commentId, delivery } = await comment('rita', '@baton run develop');
    const refusal = await reply('@rita only people with write access to acme/app can give baton commands');
    expect(refusal.body.split('\n')[0]).toBe(
      "@rita only people with write access to acme/app can give baton commands; nothing was run. See baton's docs/troubleshooting.md#permission-failures.",
    );
    expect(delivery.outcome).toBe('not_permitted');
    expect(delivery.verdict).toBe(
      'not permitted: rita lacks write permission for a command; see docs/troubleshooting.md#permission-failures',
    );
    expect(gitea.reactions(commentId)).toEqual([]);
    expect(await app!.app.runs.list()).toEqual([]);
  });

  it('answers an unknown command and help with the list of commands', async () => {
    const unknown = await comment('alice', '@baton deploy everything');
    await taken(unknown.commentId);
    const answer = await reply("I don't know the command `deploy`");
    expect(answer.body).toContain('`@baton retry`');
    expect(answer.body).toContain('`@baton run <stage> [text]`');
    const help = await comment('alice', '@baton help');
    await taken(help.commentId);
    await until(() => botComments().filter((c) => c.body.includes('`@baton status`')).length === 2, 'the help reply');
    expect(await app!.app.runs.list()).toEqual([]);
  });

  it('takes a command once when the forge delivers the same comment again under another delivery', async () => {
    const first = await comment('alice', '@baton run develop');
    await reply('Started `develop`');
    // The same comment again, its text edited meanwhile (a different body, as catch-up would send).
    const again = await comment('alice', '@baton run develop ', { commentId: first.commentId });
    expect(again.delivery.outcome).toBe('duplicate');
    expect(await app!.app.runs.list()).toHaveLength(1);
    expect(botComments().filter((c) => c.body.includes('Started'))).toHaveLength(1);
  });

  it('leaves a comment that only names baton to the pipeline', async () => {
    const { commentId, delivery } = await comment('alice', 'thanks @baton, looks good');
    expect(delivery.outcome).not.toBe('command');
    expect(gitea.reactions(commentId)).toEqual([]);
  });
});
