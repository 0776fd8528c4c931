import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.js';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';
import type { ServeHandle } from '../helpers/baton-bin.js';
import { startForgeServe, type ForgeServe } from '../helpers/forge-serve.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import { gitlabExample, gitlabHeaders, seedExampleProject } from '../helpers/gitlab-webhook.js';
import { until } from '../helpers/until.js';

/**
 * The built-in analyse prompt on GitLab, through the real `baton serve` (local workspace, forge
 * gateway): an agent that runs the prompt's own comment and label steps, as written in the prompt
 * the run got, posts its analysis as a note and labels the issue on the fake GitLab, as the dev
 * bot, through the gateway (the run holds only its capability). The commands are GitLab's
 * (`/projects/<encoded path>/issues/:iid/notes`, `add_labels`): nothing Gitea's is left.
 */

const AGENT = fileURLToPath(new URL('../fakes/agent/prompt-agent.mjs', import.meta.url));
const SECRET = 'e2e-forge-prompts-secret';
const NAMESPACE = 'gitlabhq';
const PROJECT = 'gitlab-test';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];
const ANALYSIS = '## Summary\n\nThe analysis the prompt agent wrote, posted by the prompt’s comment step.\n';

describe('the built-in prompts on GitLab, followed by the agent, through baton serve', () => {
  let world: ForgeServe | undefined;
  let gitlab: FakeGitLab;
  let server: ServeHandle;
  let store: Store;
  let devToken = '';

  beforeAll(async () => {
    gitlab = await createFakeGitLab();
    const { dev, review } = seedExampleProject(gitlab, NAMESPACE);
    devToken = dev.token;
    for (const name of ['Platform', 'ready-for-architecture']) gitlab.addLabel(NAMESPACE, PROJECT, name);
    // Issues #1..#23: the documented Issue Hook is #23's opening.
    for (let n = 1; n <= 23; n++) gitlab.addIssue(NAMESPACE, PROJECT, { title: `issue ${n}`, author: 'root' });
    Object.assign(gitlab.item(NAMESPACE, PROJECT, 23)!, { title: 'New API: create/update/delete file', labels: ['Platform'] });

    world = await startForgeServe({
      name: 'forge-prompts',
      readOnlyPaths: [path.dirname(AGENT)],
      env: {
        GITLAB_URL: gitlab.url,
        GITLAB_DEV_TOKEN: dev.token,
        GITLAB_REVIEW_TOKEN: review.token,
        GITLAB_WEBHOOK_SECRET: SECRET,
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, AGENT, '--steps', 'comment,label', '--text', ANALYSIS]),
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

  it('posts the analysis as a note and labels the issue with the commands the analyse prompt gave', async () => {
    const body = JSON.stringify(gitlabExample('issue'));
    const headers = gitlabHeaders({ event: 'Issue Hook', token: SECRET });
    const res = await fetch(`${server.url}/webhook/gitlab`, { method: 'POST', headers, body });
    expect(res.status).toBe(202);
    const delivery = await acceptedDelivery(store, (await res.json()) as object, { body, headers });
    expect(delivery, String(delivery.verdict)).toMatchObject({ outcome: 'started', stages: ['analyse'] });
    const id = delivery.runIds[0]!;
    const row = await until(async () => {
      const r = await store.db.selectFrom('runs').select(['status', 'last_error', 'summary']).where('id', '=', id).executeTakeFirst();
      return r && TERMINAL.includes(r.status) ? r : null;
    }, `run ${id} to finish`);
    expect(row, `${row.last_error}\n${row.summary}\n${server.output()}`).toMatchObject({ status: 'succeeded' });

    // The note is the agent's file, posted as the dev bot: the gateway swapped the capability for its token.
    const note = gitlab.notes(NAMESPACE, PROJECT, 23).find((n) => n.body === ANALYSIS);
    expect(note, JSON.stringify(gitlab.notes(NAMESPACE, PROJECT, 23))).toMatchObject({ author: 'claude-dev' });
    expect(gitlab.item(NAMESPACE, PROJECT, 23)!.labels).toContain('ready-for-architecture');
    // GitLab's own API, the project by its encoded path (baton's own notes go there too; the
    // label is the agent's alone); no Gitea path was asked for.
    expect(gitlab.requests).toContain(`PUT /api/v4/projects/${NAMESPACE}%2F${PROJECT}/issues/23`);
    expect(gitlab.requests.filter((r) => r.includes('/api/v1/'))).toEqual([]);
    // The run saw only its capability, never the bot's token.
    expect(row.summary ?? '').not.toContain(devToken);
  }, 120_000);
});
