/**
 * The fake GitHub's REST API (`/api/v3`, as on Enterprise Server), answering as GitHub does:
 * error bodies `{ message, documentation_url }`, `Link` pagination (`per_page` at most 100),
 * label colours without `#`, labels added by name (an unknown name is created, a GitHub quirk),
 * 404 for hooks to a non-admin. Sources in SOURCES.md.
 */
import { Hono, type Context } from 'hono';
import { addGitHubAppRoutes, appOfJwt, installationTokenRefusal, isJwt } from './apps.js';
import {
  atLeast,
  type AppRecord,
  type FakeGitHubState,
  type IssueRecord,
  type LabelRecord,
  type RepoRecord,
  type UserRecord,
} from './state.js';

const DOCS = 'https://docs.github.com/rest';
/** The events a repository webhook may subscribe to that baton uses or the tests name. */
export const HOOK_EVENTS = new Set([
  '*',
  'issues',
  'issue_comment',
  'label',
  'ping',
  'pull_request',
  'pull_request_review',
  'pull_request_review_comment',
  'push',
  'release',
]);

type Env = { Variables: { user: UserRecord | undefined; app?: AppRecord; installation?: boolean } };

export function createFakeGitHubApp(state: FakeGitHubState, hooks: { onRequest?: (c: Context) => Response | undefined }) {
  const app = new Hono<Env>().basePath('/api/v3');
  const fail = (c: Context, status: number, message: string, extra: Record<string, unknown> = {}) =>
    c.json({ message, documentation_url: DOCS, ...extra }, status as 400);

  app.use('*', async (c, next) => {
    const faulted = hooks.onRequest?.(c);
    if (faulted) return faulted;
    const header = c.req.header('authorization') ?? '';
    const match = /^(?:Bearer|token) (.+)$/i.exec(header);
    if (header && !match) return fail(c, 401, 'Bad credentials');
    if (match && isJwt(match[1]!)) {
      // A GitHub App's JWT: only the App's own endpoints take it.
      const path = new URL(c.req.url).pathname.replace(/^\/api\/v3/, '');
      if (!(path === '/app' || path.startsWith('/app/') || /^\/repos\/[^/]+\/[^/]+\/installation$/.test(path)))
        return fail(c, 401, 'A JSON web token could not be decoded');
      const signer = appOfJwt(state, match[1]!);
      if (typeof signer === 'string') return fail(c, 401, signer);
      c.set('app', signer);
    } else if (match) {
      const login = state.tokens.get(match[1]!);
      if (!login) return fail(c, 401, 'Bad credentials');
      const refused = installationTokenRefusal(state, c, match[1]!, fail);
      if (refused) return refused;
      c.set('user', state.user(login));
      c.set('installation', state.installationTokens.has(match[1]!));
    }
    await next();
  });
  addGitHubAppRoutes(app, state, fail);

  const me = (c: Context<Env>) => c.get('user');
  const page = <T>(c: Context, items: T[]): Response => {
    const perPage = Math.min(100, Math.max(1, Number(c.req.query('per_page') ?? 30) || 30));
    const number = Math.max(1, Number(c.req.query('page') ?? 1) || 1);
    const url = new URL(c.req.url);
    const pages = Math.max(1, Math.ceil(items.length / perPage));
    const link = (n: number, rel: string) => {
      url.searchParams.set('page', String(n));
      url.searchParams.set('per_page', String(perPage));
      return `<${url.toString()}>; rel="${rel}"`;
    };
    const links = [];
    if (number < pages) links.push(link(number + 1, 'next'), link(pages, 'last'));
    if (number > 1) links.push(link(1, 'first'), link(number - 1, 'prev'));
    if (links.length) c.header('Link', links.join(', '));
    return c.json(items.slice((number - 1) * perPage, number * perPage));
  };

  const user = (u: UserRecord | string | undefined) => {
    const record = typeof u === 'string' ? state.user(u) : u;
    if (!record) return null;
    return {
      login: record.login,
      id: record.id,
      node_id: `U_${record.id}`,
      type: record.type,
      site_admin: record.siteAdmin,
      name: record.name,
    };
  };
  const base = (c: Context) => new URL(c.req.url).origin;
  const label = (c: Context, repo: RepoRecord, l: LabelRecord) => ({
    id: l.id,
    node_id: `LA_${l.id}`,
    url: `${base(c)}/api/v3/repos/${repo.owner}/${repo.name}/labels/${encodeURIComponent(l.name)}`,
    name: l.name,
    color: l.color,
    default: false,
    description: l.description || null,
  });
  const labelsOf = (c: Context, repo: RepoRecord, issue: IssueRecord) =>
    issue.labels.flatMap((id) => repo.labels.filter((l) => l.id === id)).map((l) => label(c, repo, l));
  const html = (c: Context, repo: RepoRecord, path: string) => `${base(c)}/${repo.owner}/${repo.name}${path}`;
  const issueJson = (c: Context, repo: RepoRecord, issue: IssueRecord) => ({
    id: issue.id,
    number: issue.number,
    title: issue.title,
    body: issue.body || null,
    state: issue.state,
    user: user(issue.author),
    labels: labelsOf(c, repo, issue),
    html_url: html(c, repo, `/${issue.pull ? 'pull' : 'issues'}/${issue.number}`),
    created_at: issue.createdAt,
    updated_at: issue.updatedAt,
    ...(issue.pull
      ? { pull_request: { url: `${base(c)}/api/v3/repos/${repo.owner}/${repo.name}/pulls/${issue.number}`, merged_at: null } }
      : {}),
  });
  const pullJson = (c: Context, repo: RepoRecord, issue: IssueRecord, full: boolean) => {
    const pull = issue.pull!;
    const ref = (name: string, sha: string) => ({
      ref: name,
      sha,
      label: `${repo.owner}:${name}`,
      repo: { full_name: `${repo.owner}/${repo.name}` },
    });
    return {
      id: issue.id + 500_000,
      number: issue.number,
      title: issue.title,
      body: issue.body || null,
      state: issue.state,
      draft: pull.draft,
      user: user(issue.author),
      labels: labelsOf(c, repo, issue),
      head: ref(pull.head, pull.sha),
      base: ref(pull.base, '0'.repeat(40)),
      html_url: html(c, repo, `/pull/${issue.number}`),
      created_at: issue.createdAt,
      updated_at: issue.updatedAt,
      merged_at: pull.merged ? issue.updatedAt : null,
      // Only the single pull request's answer has these (lists leave them out).
      ...(full ? { merged: pull.merged, mergeable: null } : {}),
    };
  };
  const hookJson = (c: Context, repo: RepoRecord, h: RepoRecord['hooks'][number]) => ({
    type: 'Repository',
    id: h.id,
    name: 'web',
    active: h.active,
    events: h.events,
    config: { url: h.url, content_type: h.contentType, insecure_ssl: '0', ...(h.secret ? { secret: '********' } : {}) },
    updated_at: state.timestamp(),
    created_at: state.timestamp(),
    url: `${base(c)}/api/v3/repos/${repo.owner}/${repo.name}/hooks/${h.id}`,
  });

  /** The repository, or GitHub's 404 when it does not exist or the caller may not see it. */
  function repoOf(c: Context<Env>): RepoRecord | Response {
    const repo = state.repo(c.req.param('owner')!, c.req.param('repo')!);
    const caller = me(c);
    if (!repo || (repo.private && (!caller || state.permissionOf(repo, caller.login) === 'none'))) return fail(c, 404, 'Not Found');
    return repo;
  }
  function issueOf(c: Context<Env>, repo: RepoRecord): IssueRecord | Response {
    const issue = repo.issues.find((i) => i.number === Number(c.req.param('number')));
    return issue ?? fail(c, 404, 'Not Found');
  }
  /** Writes need an account; `wanted` is the least permission GitHub asks for. */
  function may(c: Context<Env>, repo: RepoRecord, wanted: 'read' | 'triage' | 'write' | 'admin'): Response | undefined {
    const caller = me(c);
    if (!caller) return fail(c, 401, 'Requires authentication');
    if (!atLeast(state.permissionOf(repo, caller.login), wanted)) {
      // GitHub hides hooks from non-admins entirely.
      return wanted === 'admin' ? fail(c, 404, 'Not Found') : fail(c, 403, 'Resource not accessible by personal access token');
    }
    return undefined;
  }
  const touch = (issue: IssueRecord) => (issue.updatedAt = state.timestamp());

  app.get('/user', (c) => {
    const caller = me(c);
    return caller ? c.json(user(caller)) : fail(c, 401, 'Requires authentication');
  });

  const R = '/repos/:owner/:repo';
  app.get(R, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    // An installation token gets no `permissions` (the installation's are the App's rights).
    const caller = c.get('installation') ? undefined : me(c);
    const p = caller ? state.permissionOf(repo, caller.login) : 'read';
    return c.json({
      id: repo.id,
      name: repo.name,
      full_name: `${repo.owner}/${repo.name}`,
      owner: user(repo.owner),
      private: repo.private,
      archived: repo.archived,
      default_branch: repo.defaultBranch,
      clone_url: `${base(c)}/${repo.owner}/${repo.name}.git`,
      ...(caller
        ? {
            permissions: {
              admin: atLeast(p, 'admin'),
              maintain: atLeast(p, 'maintain'),
              push: atLeast(p, 'write'),
              triage: atLeast(p, 'triage'),
              pull: atLeast(p, 'read'),
            },
          }
        : {}),
    });
  });

  app.get(`${R}/issues`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const stateFilter = c.req.query('state') ?? 'open';
    const since = c.req.query('since');
    let issues = repo.issues.filter((i) => stateFilter === 'all' || i.state === stateFilter);
    if (since) issues = issues.filter((i) => Date.parse(i.updatedAt) >= Date.parse(since));
    const key = c.req.query('sort') === 'updated' ? (i: IssueRecord) => Date.parse(i.updatedAt) : (i: IssueRecord) => i.number;
    issues = [...issues].sort((a, b) => key(a) - key(b) || a.number - b.number);
    if ((c.req.query('direction') ?? 'desc') === 'desc') issues.reverse();
    return page(
      c,
      issues.map((i) => issueJson(c, repo, i)),
    );
  });
  const commentJson = (c: Context, repo: RepoRecord, comment: RepoRecord['comments'][number]) => ({
    id: comment.id,
    node_id: `IC_${comment.id}`,
    body: comment.body,
    user: user(comment.author),
    html_url: html(c, repo, `/issues/${comment.issue}#issuecomment-${comment.id}`),
    issue_url: `${base(c)}/api/v3/repos/${repo.owner}/${repo.name}/issues/${comment.issue}`,
    created_at: comment.createdAt,
    updated_at: comment.updatedAt,
  });
  // Every issue's and pull request's comments: `since` keeps those updated at or after it, `sort`
  // created (the default) or updated, `direction` only with `sort`; without `sort` by ascending id
  // (docs.github.com, "List issue comments for a repository"). Before `/issues/:number`, which
  // would take `comments` for a number.
  app.get(`${R}/issues/comments`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const since = c.req.query('since');
    const sort = c.req.query('sort');
    let comments = repo.comments.filter((m) => !since || Date.parse(m.updatedAt) >= Date.parse(since));
    if (sort === 'created' || sort === 'updated') {
      const at = (m: RepoRecord['comments'][number]) => Date.parse(sort === 'created' ? m.createdAt : m.updatedAt);
      comments = [...comments].sort((a, b) => at(a) - at(b) || a.id - b.id);
      if ((c.req.query('direction') ?? 'desc') === 'desc') comments.reverse();
    } else comments = [...comments].sort((a, b) => a.id - b.id);
    return page(
      c,
      comments.map((m) => commentJson(c, repo, m)),
    );
  });
  app.get(`${R}/issues/:number`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const issue = issueOf(c, repo);
    return issue instanceof Response ? issue : c.json(issueJson(c, repo, issue));
  });
  app.get(`${R}/pulls`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const stateFilter = c.req.query('state') ?? 'open';
    let pulls = repo.issues.filter((i) => i.pull && (stateFilter === 'all' || i.state === stateFilter));
    const key = c.req.query('sort') === 'updated' ? (i: IssueRecord) => Date.parse(i.updatedAt) : (i: IssueRecord) => i.number;
    pulls = [...pulls].sort((a, b) => key(a) - key(b) || a.number - b.number);
    if ((c.req.query('direction') ?? 'desc') === 'desc') pulls.reverse();
    return page(
      c,
      pulls.map((i) => pullJson(c, repo, i, false)),
    );
  });
  app.get(`${R}/pulls/:number`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const issue = issueOf(c, repo);
    if (issue instanceof Response) return issue;
    return issue.pull ? c.json(pullJson(c, repo, issue, true)) : fail(c, 404, 'Not Found');
  });
  app.get(`${R}/pulls/:number/reviews`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const issue = issueOf(c, repo);
    if (issue instanceof Response) return issue;
    if (!issue.pull) return fail(c, 404, 'Not Found');
    return page(
      c,
      issue.pull.reviews.map((r) => ({
        id: r.id,
        user: user(r.author),
        body: r.body,
        state: r.state,
        commit_id: r.commitId,
        submitted_at: r.state === 'PENDING' ? undefined : r.submittedAt,
        html_url: html(c, repo, `/pull/${issue.number}#pullrequestreview-${r.id}`),
      })),
    );
  });

  app.get(`${R}/issues/:number/labels`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const issue = issueOf(c, repo);
    return issue instanceof Response ? issue : page(c, labelsOf(c, repo, issue));
  });
  app.post(`${R}/issues/:number/labels`, async (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'triage');
    if (refused) return refused;
    const issue = issueOf(c, repo);
    if (issue instanceof Response) return issue;
    const body = (await c.req.json().catch(() => null)) as { labels?: unknown } | null;
    const names = Array.isArray(body?.labels) ? body.labels : null;
    if (!names || !names.every((n) => typeof n === 'string')) return fail(c, 422, 'Invalid request.');
    for (const name of names as string[]) {
      let found = repo.labels.find((l) => l.name.toLowerCase() === name.toLowerCase());
      if (!found) {
        // GitHub creates a label it does not know, with its default colour.
        found = { id: state.id(), name, color: 'ededed', description: '' };
        repo.labels.push(found);
      }
      if (!issue.labels.includes(found.id)) {
        issue.labels.push(found.id);
        issue.timeline.push({ id: state.id(), event: 'labeled', actor: me(c)!.login, label: found.name, createdAt: state.timestamp() });
        touch(issue);
      }
    }
    return c.json(labelsOf(c, repo, issue));
  });
  app.delete(`${R}/issues/:number/labels/:name`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'triage');
    if (refused) return refused;
    const issue = issueOf(c, repo);
    if (issue instanceof Response) return issue;
    const name = decodeURIComponent(c.req.param('name'));
    const found = repo.labels.find((l) => l.name.toLowerCase() === name.toLowerCase() && issue.labels.includes(l.id));
    if (!found) return fail(c, 404, 'Label does not exist');
    issue.labels = issue.labels.filter((id) => id !== found.id);
    issue.timeline.push({ id: state.id(), event: 'unlabeled', actor: me(c)!.login, label: found.name, createdAt: state.timestamp() });
    touch(issue);
    return c.json(labelsOf(c, repo, issue));
  });
  app.get(`${R}/issues/:number/timeline`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const issue = issueOf(c, repo);
    if (issue instanceof Response) return issue;
    return page(
      c,
      issue.timeline.map((t) => ({
        id: t.id,
        node_id: `LE_${t.id}`,
        event: t.event,
        actor: user(t.actor),
        created_at: t.createdAt,
        ...(t.label ? { label: { name: t.label, color: repo.labels.find((l) => l.name === t.label)?.color ?? 'ededed' } } : {}),
      })),
    );
  });

  app.get(`${R}/issues/:number/comments`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const issue = issueOf(c, repo);
    if (issue instanceof Response) return issue;
    return page(
      c,
      repo.comments.filter((m) => m.issue === issue.number).map((m) => commentJson(c, repo, m)),
    );
  });
  app.post(`${R}/issues/:number/comments`, async (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'read');
    if (refused) return refused;
    const issue = issueOf(c, repo);
    if (issue instanceof Response) return issue;
    const body = (await c.req.json().catch(() => null)) as { body?: unknown } | null;
    if (typeof body?.body !== 'string' || body.body === '')
      return fail(c, 422, 'Validation Failed', { errors: [{ resource: 'IssueComment', code: 'missing_field', field: 'body' }] });
    const at = state.timestamp();
    const comment = { id: state.id(), issue: issue.number, author: me(c)!.login, body: body.body, createdAt: at, updatedAt: at };
    repo.comments.push(comment);
    touch(issue);
    return c.json(commentJson(c, repo, comment), 201);
  });
  app.patch(`${R}/issues/comments/:id`, async (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'read');
    if (refused) return refused;
    const comment = repo.comments.find((m) => m.id === Number(c.req.param('id')));
    if (!comment) return fail(c, 404, 'Not Found');
    if (comment.author !== me(c)!.login && !atLeast(state.permissionOf(repo, me(c)!.login), 'write'))
      return fail(c, 403, 'Resource not accessible by personal access token');
    const body = (await c.req.json().catch(() => null)) as { body?: unknown } | null;
    if (typeof body?.body !== 'string') return fail(c, 422, 'Validation Failed');
    comment.body = body.body;
    comment.updatedAt = state.timestamp();
    return c.json(commentJson(c, repo, comment));
  });

  app.post(`${R}/issues/comments/:id/reactions`, async (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'read');
    if (refused) return refused;
    const comment = repo.comments.find((m) => m.id === Number(c.req.param('id')));
    if (!comment) return fail(c, 404, 'Not Found');
    const body = (await c.req.json().catch(() => null)) as { content?: unknown } | null;
    const allowed = ['+1', '-1', 'laugh', 'confused', 'heart', 'hooray', 'rocket', 'eyes'];
    if (typeof body?.content !== 'string' || !allowed.includes(body.content)) return fail(c, 422, 'Validation Failed');
    const reactions = (comment.reactions ??= []);
    const existing = reactions.find((r) => r.user === me(c)!.login && r.content === body.content);
    if (existing) return c.json({ id: existing.id, content: existing.content, user: user(existing.user) }, 200);
    const reaction = { id: state.id(), user: me(c)!.login, content: body.content };
    reactions.push(reaction);
    return c.json({ id: reaction.id, content: reaction.content, user: user(reaction.user) }, 201);
  });

  app.get(`${R}/labels`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    return page(
      c,
      repo.labels.map((l) => label(c, repo, l)),
    );
  });
  app.post(`${R}/labels`, async (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'write');
    if (refused) return refused;
    const body = (await c.req.json().catch(() => null)) as { name?: unknown; color?: unknown; description?: unknown } | null;
    if (typeof body?.name !== 'string' || body.name === '') return fail(c, 422, 'Validation Failed');
    if (repo.labels.some((l) => l.name.toLowerCase() === (body.name as string).toLowerCase())) {
      return fail(c, 422, 'Validation Failed', { errors: [{ resource: 'Label', code: 'already_exists', field: 'name' }] });
    }
    const color = typeof body.color === 'string' ? body.color : 'ededed';
    // GitHub wants six hex digits without `#`.
    if (!/^[0-9a-fA-F]{6}$/.test(color))
      return fail(c, 422, 'Validation Failed', { errors: [{ resource: 'Label', code: 'invalid', field: 'color' }] });
    const created = {
      id: state.id(),
      name: body.name,
      color: color.toLowerCase(),
      description: typeof body.description === 'string' ? body.description : '',
    };
    repo.labels.push(created);
    return c.json(label(c, repo, created), 201);
  });

  app.get(`${R}/collaborators/:user/permission`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const caller = me(c);
    if (!caller) return fail(c, 401, 'Requires authentication');
    if (!atLeast(state.permissionOf(repo, caller.login), 'write'))
      return fail(c, 403, 'Must have push access to view collaborator permission.');
    const target = state.user(c.req.param('user'));
    if (!target) return fail(c, 404, 'Not Found');
    const p = state.permissionOf(repo, target.login);
    // The legacy `permission` folds maintain into write and triage into read; role_name keeps them.
    const legacy = p === 'maintain' ? 'write' : p === 'triage' ? 'read' : p;
    return c.json({ permission: legacy, role_name: p, user: user(target) });
  });

  app.get(`${R}/hooks`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'admin');
    return (
      refused ??
      page(
        c,
        repo.hooks.map((h) => hookJson(c, repo, h)),
      )
    );
  });
  app.post(`${R}/hooks`, async (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'admin');
    if (refused) return refused;
    const body = (await c.req.json().catch(() => null)) as {
      name?: unknown;
      active?: unknown;
      events?: unknown;
      config?: { url?: unknown; content_type?: unknown; secret?: unknown };
    } | null;
    if (typeof body?.config?.url !== 'string')
      return fail(c, 422, 'Validation Failed', { errors: [{ resource: 'Hook', code: 'custom', message: 'Config must contain a URL' }] });
    const events = Array.isArray(body.events) ? (body.events as string[]) : ['push'];
    const unknown = events.filter((e) => !HOOK_EVENTS.has(e));
    if (unknown.length)
      return fail(c, 422, 'Validation Failed', { errors: [{ resource: 'Hook', code: 'invalid', field: 'events', value: unknown }] });
    const hook = {
      id: state.id(),
      url: body.config.url,
      contentType: typeof body.config.content_type === 'string' ? body.config.content_type : 'form',
      secret: typeof body.config.secret === 'string' ? body.config.secret : '',
      events,
      active: body.active === undefined ? true : body.active === true,
    };
    repo.hooks.push(hook);
    return c.json(hookJson(c, repo, hook), 201);
  });
  app.patch(`${R}/hooks/:id/config`, async (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'admin');
    if (refused) return refused;
    const hook = repo.hooks.find((h) => h.id === Number(c.req.param('id')));
    if (!hook) return fail(c, 404, 'Not Found');
    const body = (await c.req.json().catch(() => ({}))) as { url?: unknown; content_type?: unknown; secret?: unknown };
    if (typeof body.url === 'string') hook.url = body.url;
    if (typeof body.content_type === 'string') hook.contentType = body.content_type;
    if (typeof body.secret === 'string') hook.secret = body.secret;
    return c.json({ url: hook.url, content_type: hook.contentType, insecure_ssl: '0', ...(hook.secret ? { secret: '********' } : {}) });
  });
  app.patch(`${R}/hooks/:id`, async (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'admin');
    if (refused) return refused;
    const hook = repo.hooks.find((h) => h.id === Number(c.req.param('id')));
    if (!hook) return fail(c, 404, 'Not Found');
    const body = (await c.req.json().catch(() => ({}))) as {
      active?: unknown;
      events?: unknown;
      config?: { url?: unknown; content_type?: unknown; secret?: unknown };
    };
    if (Array.isArray(body.events)) {
      const unknown = (body.events as string[]).filter((e) => !HOOK_EVENTS.has(e));
      if (unknown.length) return fail(c, 422, 'Validation Failed');
      hook.events = body.events as string[];
    }
    if (typeof body.active === 'boolean') hook.active = body.active;
    if (body.config) {
      // The hook's own PATCH replaces its config whole: a secret left out is gone.
      hook.url = typeof body.config.url === 'string' ? body.config.url : hook.url;
      hook.contentType = typeof body.config.content_type === 'string' ? body.config.content_type : 'form';
      hook.secret = typeof body.config.secret === 'string' ? body.config.secret : '';
    }
    return c.json(hookJson(c, repo, hook));
  });
  app.delete(`${R}/hooks/:id`, (c) => {
    const repo = repoOf(c);
    if (repo instanceof Response) return repo;
    const refused = may(c, repo, 'admin');
    if (refused) return refused;
    const before = repo.hooks.length;
    repo.hooks = repo.hooks.filter((h) => h.id !== Number(c.req.param('id')));
    return repo.hooks.length === before ? fail(c, 404, 'Not Found') : c.body(null, 204);
  });

  app.notFound((c) => fail(c, 404, 'Not Found'));
  return app;
}
