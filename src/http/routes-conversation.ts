import { Hono } from 'hono';
import { parseGitLabProjectPath, parseRepositoryName, REPOSITORY_NAME_RULE } from '../repositories/index.js';
import type { RunQueries } from '../runs/index.js';
import type { AuthEnv } from './auth.js';
import { conversationView, type RunConversationView } from './conversation-view.js';
import { HttpError } from '../web-kit/index.js';

export interface ConversationRoutesOptions {
  runs: Pick<RunQueries, 'get' | 'issue' | 'transcript' | 'conversation'>;
  now: () => number;
}

/** Most runs of one issue whose conversations `GET /api/issues/…/conversation` returns (the newest). */
export const MAX_ISSUE_CONVERSATIONS = 30;

/**
 * Runs' conversations for people (`read` scope): one run's (`GET /api/runs/:id/conversation`)
 * and an issue's across its stages (`GET /api/issues/OWNER/REPO/N/conversation`). Documented in
 * docs/api.md, "Conversations"; the workspace's own transcript route (its callback token) is
 * `/api/runs/:id/transcript`, which these never serve.
 */
export function conversationRoutes(options: ConversationRoutesOptions): Hono<AuthEnv> {
  const { runs, now } = options;
  const app = new Hono<AuthEnv>();

  async function viewOf(id: number): Promise<RunConversationView | null> {
    const run = await runs.get(id);
    if (!run) return null;
    const [jsonl, conversation] = await Promise.all([runs.transcript(id), runs.conversation(id)]);
    return conversationView(run, jsonl, conversation);
  }

  app.get('/api/runs/:id/conversation', async (c) => {
    const raw = c.req.param('id');
    if (!/^\d{1,15}$/.test(raw))
      throw new HttpError(400, 'bad_request', `run id must be a positive whole number, got "${raw.slice(0, 40)}"`);
    const view = await viewOf(Number(raw));
    if (!view) throw new HttpError(404, 'not_found', `run ${raw} does not exist`);
    return c.json(view);
  });

  app.get('/api/issues/:owner/:repo/:number/conversation', async (c) => {
    const { owner, repo, number: rawNumber } = c.req.param();
    // A GitLab project in a subgroup comes with its namespace encoded as one segment (`acme%2Fplatform`).
    const name = parseRepositoryName(`${owner}/${repo}`) ?? parseGitLabProjectPath(`${owner}/${repo}`);
    if (!name) throw new HttpError(400, 'bad_request', `repository ${REPOSITORY_NAME_RULE}, got "${`${owner}/${repo}`.slice(0, 120)}"`);
    if (!/^\d{1,15}$/.test(rawNumber) || Number(rawNumber) < 1)
      throw new HttpError(400, 'bad_request', `issue number must be a positive whole number, got "${rawNumber.slice(0, 40)}"`);
    const number = Number(rawNumber);
    const issue = await runs.issue({ ...name, number }, now());
    if (!issue) throw new HttpError(404, 'not_found', `no run of ${name.owner}/${name.repo}#${number} or its pull requests`);
    const ids = issue.runs.map((r) => r.id).slice(-MAX_ISSUE_CONVERSATIONS);
    const views: RunConversationView[] = [];
    // One run after another: each transcript is read and unpacked whole.
    for (const id of ids) {
      const view = await viewOf(id);
      if (view && (view.kept || view.waiting || view.reply)) views.push(view);
    }
    return c.json({
      owner: issue.owner,
      repo: issue.repo,
      number,
      runs: views,
      omitted: Math.max(0, issue.runs.length - ids.length),
    });
  });

  return app;
}
