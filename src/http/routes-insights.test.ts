import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { IssueView, UsageQuery } from '../runs/index.js';
import type { AuthEnv } from './auth.js';
import { errorHandler } from '../web-kit/index.js';
import { insightsRoutes } from './routes-insights.js';

/** 2026-12-01 10:00 UTC. */
const NOW = Date.UTC(2026, 11, 1, 10);

const FORGES = { gitea: 'https://git.example.com', github: 'https://github.com', gitlab: 'https://gitlab.example.com/' };

/** Issue acme/app#7 with one linked pull request and no runs: what the links are built from. */
const VIEW: IssueView = {
  owner: 'acme',
  repo: 'app',
  number: 7,
  declared: false,
  pullRequests: [{ number: 12, headRef: 'feature/issue-7-x', title: null }],
  runs: [],
  steps: [],
  totals: { runs: 0, attempts: 0, queuedMs: 0, durationMs: 0, waitMs: 0, elapsedMs: 0, tokens: 0, costUsd: 0 },
};

function appWith(view: IssueView | null = null) {
  const asked: UsageQuery[] = [];
  const issues: unknown[] = [];
  const routes = insightsRoutes({
    runs: {
      issue: async (issue) => {
        issues.push(issue);
        return view;
      },
      usage: async (query) => {
        asked.push(query);
        return { ...query, since: 0, until: 0, groups: [], totals: {} as never };
      },
    },
    forges: FORGES,
    now: () => NOW,
  });
  const app = new Hono<AuthEnv>();
  app.onError(errorHandler({ error: () => {} }));
  app.route('/', routes);
  return { app, asked, issues };
}

async function error(app: Hono<AuthEnv>, path: string): Promise<[number, string]> {
  const res = await app.request(path);
  const body = (await res.json()) as { error: { message: string } };
  return [res.status, body.error.message];
}

describe('GET /api/usage', () => {
  it('defaults to the last 30 UTC days by day', async () => {
    const { app, asked } = appWith();
    expect((await app.request('/api/usage')).status).toBe(200);
    expect(asked).toEqual([{ from: '2026-11-02', to: '2026-12-01', groupBy: 'day' }]);
  });

  it('answers a bad query with a 400 that names the parameter', async () => {
    const { app } = appWith();
    expect(await error(app, '/api/usage?from=yesterday')).toEqual([400, 'from must be a date YYYY-MM-DD (a UTC day), got "yesterday"']);
    expect(await error(app, '/api/usage?to=2026-02-30')).toEqual([400, 'to must be a date YYYY-MM-DD (a UTC day), got "2026-02-30"']);
    expect(await error(app, '/api/usage?from=2026-12-02&to=2026-12-01')).toEqual([
      400,
      'from must be on or before to, got from=2026-12-02 to=2026-12-01',
    ]);
    expect(await error(app, '/api/usage?from=2025-01-01&to=2026-12-01')).toEqual([
      400,
      'the range may span at most 366 days, got 700 (from=2025-01-01 to=2026-12-01)',
    ]);
    expect(await error(app, '/api/usage?groupBy=week')).toEqual([400, 'groupBy must be one of day, repository, stage, issue, got "week"']);
    expect(await error(app, '/api/usage?group=day')).toEqual([400, 'unknown query parameter "group" (known: from, to, groupBy)']);
  });
});

describe('GET /api/issues/OWNER/REPO/N', () => {
  it('refuses names that are not a repository or an issue number, and says when there is no run', async () => {
    const { app } = appWith();
    expect((await error(app, '/api/issues/acme/-app/7'))[0]).toBe(400);
    expect(await error(app, '/api/issues/acme/app/0')).toEqual([400, 'issue number must be a positive whole number, got "0"']);
    expect(await error(app, '/api/issues/acme/app/7')).toEqual([404, 'no run of acme/app#7 or its pull requests']);
  });

  it('reads a GitLab project in a subgroup, its namespace encoded as one segment', async () => {
    const { app } = appWith();
    expect(await error(app, '/api/issues/acme%2Fplatform/app/7')).toEqual([404, 'no run of acme/platform/app#7 or its pull requests']);
    expect((await error(app, '/api/issues/acme%2F..%2Fplatform/app/7'))[0]).toBe(400);
  });

  it('links the issue and its pull requests on the configured forge only', async () => {
    const body = (await (await appWith(VIEW).app.request('/api/issues/acme/app/7')).json()) as Record<string, unknown>;
    expect(body.issueUrl).toBe('https://git.example.com/acme/app/issues/7');
    expect(body.pullRequests).toEqual([
      { number: 12, headRef: 'feature/issue-7-x', title: null, url: 'https://git.example.com/acme/app/pulls/12' },
    ]);
    const declared = (await (await appWith({ ...VIEW, declared: true }).app.request('/api/issues/acme/app/7')).json()) as Record<
      string,
      unknown
    >;
    expect(declared.issueUrl).toBeNull();
  });

  it('reads the issue of the forge ?forge= names and links it there; another forge is refused, naming it', async () => {
    const view: IssueView = { ...VIEW, owner: 'acme/platform' };
    const { app, issues } = appWith(view);
    const gitlab = (await (await app.request('/api/issues/acme%2Fplatform/app/7?forge=gitlab')).json()) as Record<string, unknown>;
    expect(issues.at(-1)).toMatchObject({ owner: 'acme/platform', repo: 'app', number: 7, forge: 'gitlab' });
    expect(gitlab.issueUrl).toBe('https://gitlab.example.com/acme/platform/app/-/issues/7');
    expect(gitlab.pullRequests).toMatchObject([{ url: 'https://gitlab.example.com/acme/platform/app/-/merge_requests/12' }]);
    const github = (await (await app.request('/api/issues/acme/app/7?forge=github')).json()) as Record<string, unknown>;
    expect(issues.at(-1)).toMatchObject({ forge: 'github' });
    expect(github).toMatchObject({ issueUrl: 'https://github.com/acme/app/issues/7' });
    await app.request('/api/issues/acme/app/7');
    expect(issues.at(-1)).toMatchObject({ forge: 'gitea' });
    expect(await error(app, '/api/issues/acme/app/7?forge=bitbucket')).toEqual([
      400,
      'forge must be one of gitea, forgejo, github, gitlab, got "bitbucket"',
    ]);
  });
});
