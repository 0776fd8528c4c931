import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/ingress/index.js';
import type { Store } from '../../src/store/index.js';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';
import type { ServeHandle } from '../helpers/baton-bin.js';
import { startForgeServe, type ForgeServe } from '../helpers/forge-serve.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import { gitlabExample, gitlabHeaders, seedExampleProject } from '../helpers/gitlab-webhook.js';
import { until } from '../helpers/until.js';

/**
 * ChatOps on GitLab through the real `baton serve`: a note that starts with `@baton` is a command,
 * as on Gitea. Each command is a documented Note Hook body (test/fixtures/gitlab/: "Comment on an
 * issue", project gitlab-org/gitlab-test, issue #17; "Comment on a merge request", !1), with the
 * secret token GitLab sends, and three fields changed because the page documents one note each:
 * its text (`object_attributes.note`, the command), its author (`user.username`), and its id, the
 * one the fake GitLab gave the note when the test wrote it there (so the award emoji lands on it).
 * The permission is the member's access level (Developer, 30, and up may steer), the reaction the
 * award emoji `eyes`, the reply a note of the dev bot on the issue or merge request commented on.
 */

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const SECRET = 'e2e-chatops-gitlab-secret';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];
const NAMESPACE = 'gitlab-org';
const PROJECT = 'gitlab-test';
const ISSUE = 17;
const MR = 1;
/** A Developer (30): the least access level that may give commands. */
const DEVELOPER = 'dana';
/** A Reporter (20): may comment, may not steer. */
const REPORTER = 'rita';

type Kind = 'issue' | 'pull';

describe('baton serve with GitLab: ChatOps commands in notes, end to end', () => {
  let world: ForgeServe | undefined;
  let gitlab: FakeGitLab;
  let server: ServeHandle;
  let store: Store;

  beforeAll(async () => {
    gitlab = await createFakeGitLab();
    const { dev, review } = seedExampleProject(gitlab, NAMESPACE);
    for (const user of [DEVELOPER, REPORTER]) gitlab.addUser(user);
    gitlab.setAccess(NAMESPACE, PROJECT, DEVELOPER, 30);
    gitlab.setAccess(NAMESPACE, PROJECT, REPORTER, 20);
    // Issues #1..#17 (the example's is #17, closed as the example says) and merge request !1.
    for (let n = 1; n <= ISSUE; n++) gitlab.addIssue(NAMESPACE, PROJECT, { title: `issue ${n}`, author: 'root' });
    Object.assign(gitlab.item(NAMESPACE, PROJECT, ISSUE)!, { title: 'test', state: 'closed' });
    gitlab.addMergeRequest(NAMESPACE, PROJECT, {
      title: 'Tempora et eos debitis quae laborum et.',
      author: 'root',
      source: 'master',
      target: 'markdown',
    });

    world = await startForgeServe({
      name: 'chatops-gitlab',
      readOnlyPaths: [path.dirname(FAKE_CLAUDE)],
      env: {
        GITLAB_URL: gitlab.url,
        GITLAB_DEV_TOKEN: dev.token,
        GITLAB_REVIEW_TOKEN: review.token,
        GITLAB_WEBHOOK_SECRET: SECRET,
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
      await gitlab?.close();
    }
  }, 60_000);

  /** `author` writes `note` on issue #17 (or merge request !1) in the fake GitLab, and GitLab delivers its Note Hook. */
  async function comment(author: string, note: string, options: { kind?: Kind; noteId?: number } = {}) {
    const kind = options.kind ?? 'issue';
    const iid = kind === 'pull' ? MR : ISSUE;
    const noteId = options.noteId ?? gitlab.addNote(NAMESPACE, PROJECT, iid, author, note, kind).id;
    const payload = gitlabExample(kind === 'pull' ? 'note-merge-request' : 'note-issue');
    payload.user = { ...(payload.user as object), username: author };
    Object.assign(payload.object_attributes as object, { id: noteId, note });
    const body = JSON.stringify(payload);
    const headers = gitlabHeaders({ event: 'Note Hook', token: SECRET });
    const res = await fetch(`${server.url}/webhook/gitlab`, { method: 'POST', headers, body });
    expect(res.status).toBe(202);
    const delivery: Delivery = await acceptedDelivery(store, (await res.json()) as object, { body, headers });
    return { noteId, delivery };
  }

  const botNotes = (kind: Kind = 'issue') =>
    gitlab.notes(NAMESPACE, PROJECT, kind === 'pull' ? MR : ISSUE, kind).filter((n) => n.author === 'claude-dev');
  const reply = (text: string, kind: Kind = 'issue') =>
    until(
      () => botNotes(kind).find((n) => n.body.includes(text)),
      `a reply with "${text}" (posted: ${JSON.stringify(botNotes(kind).map((n) => n.body.slice(0, 80)))})`,
      20_000,
    );
  const awards = (noteId: number, kind: Kind = 'issue') => gitlab.awards(NAMESPACE, PROJECT, kind === 'pull' ? MR : ISSUE, noteId, kind);
  const taken = (noteId: number, kind: Kind = 'issue') =>
    until(() => awards(noteId, kind).some((a) => a.user === 'claude-dev' && a.name === 'eyes'), 'the eyes award emoji');
  const runs = () => store.db.selectFrom('runs').select(['id', 'key', 'stage', 'status', 'payload']).orderBy('id').execute();

  let runNoteId = 0;

  it('starts analyse for a Developer’s `@baton run analyse extra text`, with the text as its $ARGUMENTS', async () => {
    const { noteId, delivery } = await comment(DEVELOPER, '@baton run analyse extra text');
    runNoteId = noteId;
    expect(delivery, delivery.verdict ?? '').toMatchObject({ outcome: 'command', verdict: expect.stringContaining('Started `analyse`') });
    await taken(noteId);
    const [run] = await runs();
    expect(run).toMatchObject({ key: `analyse:gitlab:${NAMESPACE}/${PROJECT}#${ISSUE}`, stage: 'analyse' });
    expect(JSON.parse(run!.payload)).toMatchObject({ arguments: 'extra text', forge: 'gitlab', trigger: `command by ${DEVELOPER}` });
    await reply(`Started \`analyse\`: run ${run!.id} is queued.`);
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

  it('takes the same note once when GitLab delivers it again', async () => {
    const before = (await runs()).length;
    const again = await comment(DEVELOPER, '@baton run analyse extra text', { noteId: runNoteId });
    expect(again.delivery.outcome).toBe('duplicate');
    expect(await runs()).toHaveLength(before);
    expect(botNotes().filter((n) => n.body.includes('Started `analyse`'))).toHaveLength(1);
  });

  it('answers a Reporter that they may not, and runs nothing', async () => {
    const before = (await runs()).length;
    const { noteId, delivery } = await comment(REPORTER, '@baton run analyse');
    expect(delivery).toMatchObject({ outcome: 'not_permitted' });
    const refusal = await reply(`@${REPORTER} only people with write access`);
    expect(refusal.body.split('\n')[0]).toBe(
      `@${REPORTER} only people with write access to ${NAMESPACE}/${PROJECT} can give baton commands; nothing was run. See baton's docs/troubleshooting.md#permission-failures.`,
    );
    expect(awards(noteId)).toEqual([]);
    expect(await runs()).toHaveLength(before);
  });

  it('answers an unknown command with the help', async () => {
    const { noteId, delivery } = await comment(DEVELOPER, '@baton deploy everything');
    expect(delivery.outcome).toBe('command');
    await taken(noteId);
    const answer = await reply("I don't know the command `deploy`");
    expect(answer.body).toContain('`@baton run <stage> [text]`');
  });

  it('never takes a command from its own bot', async () => {
    const helps = () => botNotes().filter((n) => n.body.includes('`@baton status`')).length;
    const before = helps();
    const own = await comment('claude-dev', '@baton help');
    expect(own.delivery).toMatchObject({ outcome: 'ignored', verdict: 'ignored: command from a bot' });
    // A person's help after it: its reply is queued behind anything the bot's note had queued.
    const person = await comment('root', '@baton help');
    await taken(person.noteId);
    await until(() => helps() === before + 1, 'the person’s help reply');
    expect(helps()).toBe(before + 1);
    expect(awards(own.noteId)).toEqual([]);
  });

  it('replies to `@baton status` with the issue’s runs, and on the merge request with its own', async () => {
    const { noteId } = await comment(DEVELOPER, '@baton status');
    await taken(noteId);
    const [run] = await runs();
    const status = await reply(`Status of #${ISSUE}: 1 run(s)`);
    expect(status.body).toContain(`| ${run!.id} | \`analyse\` | ${run!.status} |`);

    // The merge request !1 is not issue #1: its note, award emoji and reply stay on it.
    const onMr = await comment(DEVELOPER, '@baton status', { kind: 'pull' });
    expect(onMr.delivery.outcome).toBe('command');
    await taken(onMr.noteId, 'pull');
    await reply(`No runs yet for ${NAMESPACE}/${PROJECT}!${MR}.`, 'pull');
    expect(gitlab.notes(NAMESPACE, PROJECT, 1)).toEqual([]);
  });
});
