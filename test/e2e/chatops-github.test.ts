import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/ingress/index.js';
import type { Store } from '../../src/store/index.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import type { ServeHandle } from '../helpers/baton-bin.js';
import { startForgeServe, type ForgeServe } from '../helpers/forge-serve.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import { githubExample, githubHeaders } from '../helpers/github-webhook.js';
import { until } from '../helpers/until.js';

/**
 * ChatOps on GitHub through the real `baton serve`: a comment that starts with `@baton` is a
 * command, as on Gitea. Each command is the real `issue_comment.created` body of
 * `@octokit/webhooks-examples` (Codertocat/Hello-World, issue #1), signed as GitHub signs it,
 * with three fields changed because the corpus has one comment only: its body (the command),
 * its author (`comment.user` and `sender`), and its id, the one the fake GitHub gave the comment
 * when the test wrote it there (so the reaction lands on it). The permission comes from GitHub's
 * collaborator permission API, the reaction is GitHub's `eyes`, the reply a comment of the dev bot.
 */

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const SECRET = 'e2e-chatops-github-secret';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];
const OWNER = 'Codertocat';
const REPO = 'Hello-World';
const WRITER = 'octo-writer';
const READER = 'octo-reader';

describe('baton serve with GitHub: ChatOps commands in issue comments, end to end', () => {
  let world: ForgeServe | undefined;
  let github: FakeGitHub;
  let server: ServeHandle;
  let store: Store;

  beforeAll(async () => {
    github = await createFakeGitHub();
    const dev = github.addUser('claude-dev');
    const review = github.addUser('claude-review');
    for (const login of [OWNER, WRITER, READER]) github.addUser(login);
    github.addRepo(OWNER, REPO);
    github.state.repo(OWNER, REPO)!.defaultBranch = 'master';
    // The repository's git, served by the fake GitHub (seeding makes its default branch).
    github.gitRepo(OWNER, REPO);
    for (const bot of ['claude-dev', 'claude-review']) github.setPermission(OWNER, REPO, bot, 'write');
    github.setPermission(OWNER, REPO, WRITER, 'write');
    github.setPermission(OWNER, REPO, READER, 'read');
    github.addIssue(OWNER, REPO, { title: 'Spelling error in the README file', author: OWNER });

    world = await startForgeServe({
      name: 'chatops-github',
      readOnlyPaths: [path.dirname(FAKE_CLAUDE)],
      env: {
        GITHUB_URL: github.url,
        GITHUB_DEV_TOKEN: dev.token,
        GITHUB_REVIEW_TOKEN: review.token,
        GITHUB_WEBHOOK_SECRET: SECRET,
        QUEUE_CONCURRENCY: '1',
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
      },
    });
    ({ server, store } = world);
  }, 60_000);

  afterAll(async () => {
    try {
      await world?.close();
    } finally {
      await github?.close();
    }
  }, 60_000);

  /** `author` comments `body` on issue #1 (in the fake GitHub), and GitHub delivers its `issue_comment` webhook. */
  async function comment(author: string, body: string, options: { commentId?: number } = {}) {
    const commentId = options.commentId ?? github.addComment(OWNER, REPO, 1, author, body).id;
    const payload = githubExample('issue_comment', 'created');
    const login = { ...(payload.sender as object), login: author };
    payload.comment = { ...(payload.comment as object), id: commentId, body, user: login };
    payload.sender = login;
    const raw = JSON.stringify(payload);
    const headers = githubHeaders(raw, { event: 'issue_comment', secret: SECRET });
    const res = await fetch(`${server.url}/webhook/github`, { method: 'POST', headers, body: raw });
    expect(res.status).toBe(202);
    const delivery: Delivery = await acceptedDelivery(store, (await res.json()) as object, { body: raw, headers });
    return { commentId, delivery };
  }

  const botComments = () => github.comments(OWNER, REPO, 1).filter((c) => c.author === 'claude-dev');
  const reply = (text: string) =>
    until(
      () => botComments().find((c) => c.body.includes(text)),
      `a reply with "${text}" (posted: ${JSON.stringify(botComments().map((c) => c.body.slice(0, 80)))})`,
      20_000,
    );
  const taken = (commentId: number) =>
    until(() => github.reactions(OWNER, REPO, commentId).some((r) => r.user === 'claude-dev' && r.content === 'eyes'), 'the eyes reaction');
  const runs = () => store.db.selectFrom('runs').select(['id', 'key', 'stage', 'status', 'payload']).orderBy('id').execute();

  let runCommentId = 0;

  it('starts analyse for a write user’s `@baton run analyse extra text`, with the text as its $ARGUMENTS', async () => {
    const { commentId, delivery } = await comment(WRITER, '@baton run analyse extra text');
    runCommentId = commentId;
    expect(delivery, delivery.verdict ?? '').toMatchObject({ outcome: 'command', verdict: expect.stringContaining('Started `analyse`') });
    await taken(commentId);
    const [run] = await runs();
    expect(run).toMatchObject({ key: `analyse:github:${OWNER}/${REPO}#1`, stage: 'analyse' });
    expect(JSON.parse(run!.payload)).toMatchObject({ arguments: 'extra text', forge: 'github', trigger: `command by ${WRITER}` });
    await reply(`Started \`analyse\`: run ${run!.id} is queued.`);
    // The agent got the stage's prompt with the text where `$ARGUMENTS` stands (its first line: `# Analyse issue #$ARGUMENTS`).
    const prompt = await until(
      () =>
        store.db.selectFrom('run_events').select('data').where('run_id', '=', run!.id).where('type', '=', 'run:prompt').executeTakeFirst(),
      'the run’s prompt',
      30_000,
    );
    const reported = JSON.parse(prompt.data!) as { text: string; arguments: string };
    expect(reported.arguments).toBe('extra text');
    expect(reported.text.split('\n')[0]).toBe('# Analyse issue #extra text');
    await until(async () => TERMINAL.includes((await runs())[0]!.status), 'the run to finish', 30_000);
  });

  it('takes the same comment once when GitHub delivers it again', async () => {
    const first = (await runs()).length;
    const again = await comment(WRITER, '@baton run analyse extra text', { commentId: runCommentId });
    expect(again.delivery.outcome).toBe('duplicate');
    expect(await runs()).toHaveLength(first);
    expect(botComments().filter((c) => c.body.includes('Started `analyse`'))).toHaveLength(1);
  });

  it('answers a read-only user that they may not, and runs nothing', async () => {
    const before = (await runs()).length;
    const { commentId, delivery } = await comment(READER, '@baton run analyse');
    expect(delivery).toMatchObject({ outcome: 'not_permitted' });
    const refusal = await reply(`@${READER} only people with write access`);
    expect(refusal.body.split('\n')[0]).toBe(
      `@${READER} only people with write access to ${OWNER}/${REPO} can give baton commands; nothing was run. See baton's docs/troubleshooting.md#permission-failures.`,
    );
    expect(github.reactions(OWNER, REPO, commentId)).toEqual([]);
    expect(await runs()).toHaveLength(before);
  });

  it('answers an unknown command with the help', async () => {
    const { commentId, delivery } = await comment(WRITER, '@baton deploy everything');
    expect(delivery.outcome).toBe('command');
    await taken(commentId);
    const answer = await reply("I don't know the command `deploy`");
    expect(answer.body).toContain('`@baton run <stage> [text]`');
    expect(answer.body).toContain('`@baton status`');
  });

  it('never takes a command from its own bot', async () => {
    const helps = () => botComments().filter((c) => c.body.includes('`@baton status`')).length;
    const before = helps();
    const own = await comment('claude-dev', '@baton help');
    expect(own.delivery).toMatchObject({ outcome: 'ignored', verdict: 'ignored: command from a bot' });
    // A person's help after it: its reply is queued behind anything the bot's comment had queued.
    const person = await comment(WRITER, '@baton help');
    await taken(person.commentId);
    await until(() => helps() === before + 1, 'the person’s help reply');
    expect(helps()).toBe(before + 1);
    expect(github.reactions(OWNER, REPO, own.commentId)).toEqual([]);
  });

  it('replies to `@baton status` with the issue’s runs', async () => {
    const { commentId } = await comment(WRITER, '@baton status');
    await taken(commentId);
    const [run] = await runs();
    const status = await reply('Status of #1: 1 run(s)');
    expect(status.body).toContain(`| ${run!.id} | \`analyse\` | ${run!.status} |`);
  });
});
