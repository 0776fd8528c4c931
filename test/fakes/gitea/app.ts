/**
 * Routes of the fake Gitea, following reference/gitea/API.md: base path `/api/v1`, token auth
 * as `services/auth/oauth2.go` `parseToken` reads it, Gitea's status codes and error bodies.
 */
import crypto from 'node:crypto';
import { Hono, type Context } from 'hono';
import {
  renderTimeline,
  renderComment,
  renderHook,
  renderIssue,
  renderLabel,
  renderPullRequest,
  renderRepository,
  renderReview,
  renderUser,
} from './render.js';
import { bareRepoPath, readBranch } from './git-http.js';
import type { CommentRecord, FakeGiteaState, HookRecord, IssueRecord, RepoRecord, UserRecord } from './state.js';

export interface FakeGiteaAppOptions {
  state: FakeGiteaState;
  /** Root URL the server is reachable at (used in `html_url`, `url` fields). */
  baseUrl: () => string;
  /** Report the repository owner as `owner` (Gitea before 1.24) instead of `admin`. */
  legacyOwnerPermission: boolean;
  /** Show a hook's review flag as the three delivery types, as Gitea up to 1.23 does. */
  legacyHookReviewEvents: boolean;
  /** Where the repositories made with `git` live on disk. */
  gitRoot: () => string;
}

type Env = { Variables: { user: UserRecord; repo: RepoRecord; authScheme: string; token: string } };

/** Event names a hook create or edit takes (routers/api/v1/utils/hook.go `addHook`/`editHook`); unknown ones are dropped silently. */
const SINGLE_EVENTS = [
  'create',
  'delete',
  'fork',
  'push',
  'wiki',
  'repository',
  'release',
  'issue_assign',
  'issue_label',
  'issue_milestone',
  'issue_comment',
  'pull_request_assign',
  'pull_request_label',
  'pull_request_milestone',
  'pull_request_comment',
  'pull_request_review',
  'pull_request_review_request',
  'pull_request_sync',
];
const ISSUE_GROUP = ['issue_assign', 'issue_label', 'issue_milestone', 'issue_comment'];
const PULL_GROUP = [
  'pull_request_assign',
  'pull_request_label',
  'pull_request_milestone',
  'pull_request_comment',
  'pull_request_review',
  'pull_request_review_request',
  'pull_request_sync',
];
/** modules/setting/ui.go: the default `[ui] REACTIONS`. */
const ALLOWED_REACTIONS = ['+1', '-1', 'laugh', 'hooray', 'confused', 'heart', 'rocket', 'eyes'];
const HOOK_TYPES = ['gitea', 'gogs', 'slack', 'discord', 'dingtalk', 'telegram', 'msteams', 'feishu', 'matrix', 'wechatwork', 'packagist'];

/**
 * The flags a hook stores for the events asked for: case-insensitive, `issues` and `pull_request`
 * switch on their whole group (stored `issues` / `pull_request` being the bare events, asked for
 * as `issues_only` / `pull_request_only`), nothing asked for means `push` only.
 */
function hookEvents(requested: unknown): Set<string> {
  const asked = (Array.isArray(requested) ? requested : []).filter((e): e is string => typeof e === 'string').map((e) => e.toLowerCase());
  const list = asked.length === 0 ? ['push'] : asked;
  const events = new Set<string>();
  const has = (name: string) => list.includes(name);
  for (const name of SINGLE_EVENTS) {
    if (has(name) || (ISSUE_GROUP.includes(name) && has('issues')) || (PULL_GROUP.includes(name) && has('pull_request'))) events.add(name);
  }
  if (has('issues_only') || has('issues')) events.add('issues');
  if (has('pull_request_only') || has('pull_request')) events.add('pull_request');
  return events;
}

/**
 * The token scope a route needs (routers/api/v1/api.go `tokenRequiresScopes`): the category from
 * the route group (`/user`; issues, comments and labels; the rest of a repository), the level
 * from the method (reading or not).
 */
function requiredScope(method: string, path: string): string | undefined {
  const level = method === 'GET' || method === 'HEAD' ? 'read' : 'write';
  if (path === '/api/v1/user' || path.startsWith('/api/v1/user/')) return `${level}:user`;
  if (/^\/api\/v1\/repos\/[^/]+\/[^/]+\/(issues|labels)(\/|$)/.test(path)) return `${level}:issue`;
  if (path.startsWith('/api/v1/repos/')) return `${level}:repository`;
  return undefined;
}

export function createFakeGiteaApp(options: FakeGiteaAppOptions): Hono<Env> {
  const { state } = options;
  const app = new Hono<Env>();
  const swaggerUrl = () => `${options.baseUrl()}/api/swagger`;
  const apiError = (c: Context, status: 401 | 403 | 409 | 422 | 423 | 500, message: string) =>
    c.json({ message, url: swaggerUrl() }, status);
  // APIContext.NotFound: `errors` is null unless the handler passed errors.
  const notFound = (c: Context, errors: string[] | null = null) =>
    c.json({ errors, message: "The target couldn't be found.", url: swaggerUrl() }, 404);

  app.notFound((c) => notFound(c));
  app.onError((err, c) => apiError(c, 500, err.message));

  app.use('/api/v1/*', async (c, next) => {
    const found = findToken(c) ?? findBasic(c);
    if (!found) return apiError(c, 401, 'token is required');
    const userId = lookupToken(state.tokens, found.token);
    let user = userId === undefined ? undefined : state.users.get(userId);
    // Basic auth with a token as the password must name the token's owner.
    if (user && found.scheme === 'basic' && found.login !== undefined && found.login.toLowerCase() !== user.login.toLowerCase())
      user = undefined;
    if (!user) return apiError(c, 401, 'user does not exist or token is invalid');
    c.set('user', user);
    c.set('authScheme', found.scheme);
    c.set('token', found.token);
    // Scoped tokens (Gitea 1.19+): checked before the repository is even looked up.
    const scopes = state.tokenScopes.get(found.token);
    const needed = requiredScope(c.req.method, c.req.path);
    if (scopes && needed && !scopes.has('all') && !scopes.has(needed) && !scopes.has(needed.replace(/^read:/, 'write:'))) {
      return apiError(c, 403, `token does not have at least one of required scope(s): [${needed}]`);
    }
    await next();
  });

  app.get('/api/v1/user', (c) => c.json(renderUser(options.baseUrl(), c.get('user'))));

  // Repository assignment: a repository the user cannot see is reported as missing, as Gitea does.
  app.use('/api/v1/repos/:owner/:repo/*', async (c, next) => {
    const repo = state.repo(c.req.param('owner'), c.req.param('repo'));
    if (!repo || state.permission(c.get('user'), repo) === 'none') return notFound(c);
    c.set('repo', repo);
    await next();
  });

  const base = () => options.baseUrl();

  // `GET /repos/{owner}/{repo}` (the `/*` assignment above does not cover the bare path).
  app.get('/api/v1/repos/:owner/:repo', (c) => {
    const repo = state.repo(c.req.param('owner'), c.req.param('repo'));
    if (!repo || state.permission(c.get('user'), repo) === 'none') return notFound(c);
    return c.json(renderRepository(base(), state, repo, c.get('user')));
  });

  // Webhooks: repository admins only (reqAdmin), as reference/gitea/API.md "Endpoints for catch-up and onboarding" says.
  const isAdmin = (c: Context<Env>) => state.permission(c.get('user'), c.get('repo')) === 'admin';
  const notAdmin = (c: Context<Env>) => apiError(c, 403, 'user should be an owner or a collaborator with admin write of a repository');
  const hookOf = (c: Context<Env>): HookRecord | undefined => {
    const hook = state.hooks.get(Number(c.req.param('id')));
    return hook && hook.repoId === c.get('repo').id ? hook : undefined;
  };
  const showHook = (hook: HookRecord) => renderHook(hook, options.legacyHookReviewEvents);

  app.get('/api/v1/repos/:owner/:repo/hooks', (c) => {
    if (!isAdmin(c)) return notAdmin(c);
    return c.json(paginate(c, state.repoHooks(c.get('repo').id)).map(showHook));
  });

  app.post('/api/v1/repos/:owner/:repo/hooks', async (c) => {
    if (!isAdmin(c)) return notAdmin(c);
    const form = ((await jsonBody(c)) ?? {}) as Record<string, unknown>;
    const type = typeof form.type === 'string' ? form.type : '';
    if (!HOOK_TYPES.includes(type)) return apiError(c, 422, `Invalid hook type: ${type}`);
    const config = (form.config && typeof form.config === 'object' ? form.config : {}) as Record<string, unknown>;
    for (const name of ['url', 'content_type']) if (!(name in config)) return apiError(c, 422, `Missing config option: ${name}`);
    if (config.content_type !== 'json' && config.content_type !== 'form') return apiError(c, 422, 'Invalid content type');
    if (!/^https?:\/\/[^/\s]+/i.test(String(config.url))) return apiError(c, 422, 'Invalid url');
    const now = state.timestamp();
    const hook: HookRecord = {
      id: state.nextId('hook'),
      repoId: c.get('repo').id,
      type,
      url: String(config.url),
      contentType: config.content_type,
      secret: typeof config.secret === 'string' ? config.secret : '',
      events: hookEvents(form.events),
      // Omitted means false: such a hook gets nothing, not even test deliveries.
      active: form.active === true,
      branchFilter: typeof form.branch_filter === 'string' ? form.branch_filter : '',
      authorizationHeader: typeof form.authorization_header === 'string' ? form.authorization_header : '',
      createdAt: now,
      updatedAt: now,
    };
    state.hooks.set(hook.id, hook);
    return c.json(showHook(hook), 201);
  });

  app.get('/api/v1/repos/:owner/:repo/hooks/:id', (c) => {
    if (!isAdmin(c)) return notAdmin(c);
    const hook = hookOf(c);
    return hook ? c.json(showHook(hook)) : notFound(c);
  });

  app.patch('/api/v1/repos/:owner/:repo/hooks/:id', async (c) => {
    if (!isAdmin(c)) return notAdmin(c);
    const hook = hookOf(c);
    if (!hook) return notFound(c);
    const form = ((await jsonBody(c)) ?? {}) as Record<string, unknown>;
    const config = form.config && typeof form.config === 'object' ? (form.config as Record<string, unknown>) : undefined;
    if (config && 'content_type' in config && config.content_type !== 'json' && config.content_type !== 'form')
      return apiError(c, 422, 'Invalid content type');
    // Not a partial update: omitted events become push only, an omitted branch filter and
    // authorization header become empty. URL, content type and active stay when absent, and the
    // secret is ignored (reference/gitea/API.md).
    if (config && typeof config.url === 'string') hook.url = config.url;
    if (config && (config.content_type === 'json' || config.content_type === 'form')) hook.contentType = config.content_type;
    hook.events = hookEvents(form.events);
    hook.branchFilter = typeof form.branch_filter === 'string' ? form.branch_filter : '';
    hook.authorizationHeader = typeof form.authorization_header === 'string' ? form.authorization_header : '';
    if (typeof form.active === 'boolean') hook.active = form.active;
    hook.updatedAt = state.timestamp();
    return c.json(showHook(hook), 200);
  });

  app.delete('/api/v1/repos/:owner/:repo/hooks/:id', (c) => {
    if (!isAdmin(c)) return notAdmin(c);
    const hook = hookOf(c);
    if (!hook) return notFound(c);
    state.hooks.delete(hook.id);
    return c.body(null, 204);
  });

  app.post('/api/v1/repos/:owner/:repo/hooks/:id/tests', (c) => {
    if (!isAdmin(c)) return notAdmin(c);
    return hookOf(c) ? c.body(null, 204) : notFound(c);
  });
  const canWrite = (c: Context<Env>) => ['write', 'admin'].includes(state.permission(c.get('user'), c.get('repo')));
  const issueOf = (c: Context<Env>): IssueRecord | undefined => {
    const index = Number(c.req.param('index'));
    return Number.isSafeInteger(index) && index > 0 ? state.issue(c.get('repo').id, index) : undefined;
  };

  // routers/api/v1/repo/issue_comment.go ListRepoIssueComments (SOURCES.md): plain comments of
  // every issue and pull request, `since`/`before` inclusive on the comment's updated_at (422 when
  // not RFC 3339), oldest created first (created_unix, id), X-Total-Count the filtered total. Only
  // with `page` is the list paged (FindComments paginates when opts.Page > 0): without it every
  // comment comes at once, whatever `limit` says.
  app.get('/api/v1/repos/:owner/:repo/issues/comments', (c) => {
    const repo = c.get('repo');
    const since = timeQuery(c.req.query('since'));
    const before = timeQuery(c.req.query('before'));
    if (since === null || before === null) return apiError(c, 422, 'parsing time "since" or "before": not RFC 3339');
    const all = [...state.comments.values()]
      .filter((comment) => comment.repoId === repo.id)
      .filter(
        (comment) =>
          (since === undefined || wholeSeconds(comment.updatedAt) >= since) &&
          (before === undefined || wholeSeconds(comment.updatedAt) <= before),
      )
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id - b.id);
    const listed = Number(c.req.query('page')) > 0 ? paginate(c, all) : all;
    c.header('X-Total-Count', String(all.length));
    return c.json(listed.map((comment) => renderComment(base(), state, repo, comment)));
  });

  app.get('/api/v1/repos/:owner/:repo/issues/comments/:id', (c) => {
    const comment = state.comments.get(Number(c.req.param('id')));
    if (!comment || comment.repoId !== c.get('repo').id) return notFound(c);
    return c.json(renderComment(base(), state, c.get('repo'), comment));
  });

  app.patch('/api/v1/repos/:owner/:repo/issues/comments/:id', async (c) => {
    const repo = c.get('repo');
    const comment = state.comments.get(Number(c.req.param('id')));
    if (!comment || comment.repoId !== repo.id) return notFound(c);
    if (repo.archived) return apiError(c, 423, 'repo is archived');
    if (comment.authorId !== c.get('user').id && !canWrite(c)) return apiError(c, 403, 'user should be the poster or have write access');
    const body = await stringField(c, 'body');
    if (body === undefined) return apiError(c, 422, '[Body]: Required');
    comment.body = body;
    comment.updatedAt = state.timestamp();
    return c.json(renderComment(base(), state, repo, comment), 200);
  });

  // routers/api/v1/repo/issue_reaction.go changeIssueCommentReaction: the content must be one of
  // setting.UI.Reactions (403 otherwise); a reaction the user already gave answers 200 with it,
  // a new one 201. Reading the issues is enough to react.
  app.post('/api/v1/repos/:owner/:repo/issues/comments/:id/reactions', async (c) => {
    const repo = c.get('repo');
    const comment = state.comments.get(Number(c.req.param('id')));
    if (!comment || comment.repoId !== repo.id) return notFound(c);
    const content = await stringField(c, 'content');
    if (content === undefined || !ALLOWED_REACTIONS.includes(content))
      return apiError(c, 403, `'${content ?? ''}' is not an allowed reaction`);
    const user = c.get('user');
    const list = state.reactions.get(comment.id) ?? [];
    const render = (r: { userId: number; content: string; createdAt: string }) => ({
      user: renderUser(base(), state.users.get(r.userId)!),
      content: r.content,
      created_at: r.createdAt,
    });
    const existing = list.find((r) => r.userId === user.id && r.content === content);
    if (existing) return c.json(render(existing), 200);
    const reaction = { userId: user.id, content, createdAt: state.timestamp() };
    state.reactions.set(comment.id, [...list, reaction]);
    return c.json(render(reaction), 201);
  });

  app.get('/api/v1/repos/:owner/:repo/issues/:index', (c) => {
    const issue = issueOf(c);
    return issue ? c.json(renderIssue(base(), state, c.get('repo'), issue)) : notFound(c);
  });

  app.get('/api/v1/repos/:owner/:repo/issues/:index/comments', (c) => {
    const issue = issueOf(c);
    if (!issue) return notFound(c);
    const repo = c.get('repo');
    const list = state.issueComments(repo.id, issue.number).map((comment) => renderComment(base(), state, repo, comment));
    c.header('X-Total-Count', String(list.length));
    return c.json(list);
  });

  app.post('/api/v1/repos/:owner/:repo/issues/:index/comments', async (c) => {
    const issue = issueOf(c);
    if (!issue) return notFound(c);
    const repo = c.get('repo');
    if (repo.archived) return apiError(c, 423, 'repo is archived');
    const body = await stringField(c, 'body');
    if (body === undefined) return apiError(c, 422, '[Body]: Required');
    const now = state.timestamp();
    const comment = {
      id: state.nextId('comment'),
      repoId: repo.id,
      issueNumber: issue.number,
      authorId: c.get('user').id,
      body,
      createdAt: now,
      updatedAt: now,
    };
    state.comments.set(comment.id, comment);
    // CreateComment bumps the issue's updated_at (what `since` filters on).
    issue.updatedAt = now;
    return c.json(renderComment(base(), state, repo, comment), 201);
  });

  /** One `label` timeline entry per label added or removed, by the user who did it. */
  const recordLabelChanges = (issue: IssueRecord, before: readonly number[], after: readonly number[], authorId: number) => {
    for (const id of before) if (!after.includes(id)) state.addTimeline(issue, { type: 'label', authorId, labelId: id, content: '' });
    for (const id of after) if (!before.includes(id)) state.addTimeline(issue, { type: 'label', authorId, labelId: id, content: '1' });
  };

  // routers/api/v1/repo/issue.go ListIssues (reference/gitea/API.md, "Endpoints for catch-up"):
  // `state` open by default (and for unknown values); `type` issues|pulls, omitted = both; `since` /
  // `before` RFC 3339, inclusive, on updated_at (422 when unparsable); newest created first (no
  // `sort`); paged with X-Total-Count (the filtered total) and Link.
  app.get('/api/v1/repos/:owner/:repo/issues', (c) => {
    const repo = c.get('repo');
    const since = timeQuery(c.req.query('since'));
    const before = timeQuery(c.req.query('before'));
    if (since === null || before === null) return apiError(c, 422, 'parsing time "since" or "before": not RFC 3339');
    const wanted = c.req.query('state') === 'closed' ? 'closed' : c.req.query('state') === 'all' ? 'all' : 'open';
    const type = c.req.query('type');
    const all = [...state.issues.values()]
      .filter((i) => i.repoId === repo.id)
      .filter((i) => wanted === 'all' || i.state === wanted)
      .filter((i) => (type === 'issues' ? !i.pull : type === 'pulls' ? Boolean(i.pull) : true))
      .filter(
        (i) => (since === undefined || Date.parse(i.updatedAt) >= since) && (before === undefined || Date.parse(i.updatedAt) <= before),
      )
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id - a.id);
    return c.json(paginate(c, all).map((i) => renderIssue(base(), state, repo, i)));
  });

  // routers/api/v1/repo/pull.go ListPullRequests: `state` open|closed|all, omitted = all (the model
  // filters only on exactly open/closed); `sort=recentupdate` is updated_at descending, anything
  // else newest created first; no `since`.
  app.get('/api/v1/repos/:owner/:repo/pulls', (c) => {
    const repo = c.get('repo');
    const wanted = c.req.query('state');
    const byUpdate = c.req.query('sort') === 'recentupdate';
    const all = [...state.issues.values()]
      .filter((i) => i.repoId === repo.id && i.pull !== null)
      .filter((i) => (wanted === 'open' || wanted === 'closed' ? i.state === wanted : true))
      .sort((a, b) => (byUpdate ? b.updatedAt.localeCompare(a.updatedAt) : b.createdAt.localeCompare(a.createdAt)) || b.id - a.id);
    return c.json(paginate(c, all).map((i) => renderPullRequest(base(), state, repo, i)));
  });

  // routers/api/v1/repo/pull.go CreatePullRequest (CreatePullRequestOption {head, base, title,
  // body}): head == base is 422 `Invalid PullRequest: There are no changes between the head and the
  // base`; a head or base branch the git repository lacks is 404 (parseCompareInfo); an unmerged
  // pull request with the same head and base is 409; else 201 with the PullRequest, posted by the
  // signed-in user, its head at the branch's commit. Reading the repository is enough (the route's
  // reqRepoReader(unit.TypePullRequests)): pushing the head is what takes write access.
  app.post('/api/v1/repos/:owner/:repo/pulls', async (c) => {
    const repo = c.get('repo');
    if (repo.archived) return apiError(c, 423, 'repo is archived');
    const form = ((await jsonBody(c)) ?? {}) as Record<string, unknown>;
    const head = typeof form.head === 'string' ? form.head : '';
    const baseRef = typeof form.base === 'string' && form.base !== '' ? form.base : repo.defaultBranch;
    const title = typeof form.title === 'string' ? form.title : '';
    if (title === '') return apiError(c, 422, '[Title]: Required');
    if (head === baseRef) return apiError(c, 422, 'Invalid PullRequest: There are no changes between the head and the base');
    const bare = bareRepoPath(options.gitRoot(), repo.owner, repo.name);
    const headCommit = readBranch(bare, head);
    const baseCommit = readBranch(bare, baseRef);
    if (!headCommit || !baseCommit) return notFound(c);
    const open = [...state.issues.values()].find(
      (i) =>
        i.repoId === repo.id && i.pull && !i.pull.merged && i.state === 'open' && i.pull.headRef === head && i.pull.baseRef === baseRef,
    );
    if (open)
      return apiError(
        c,
        409,
        `pull request already exists for these targets [id: ${open.id}, issue_id: ${open.number}, head_branch: ${head}, base_branch: ${baseRef}]`,
      );
    const now = state.timestamp();
    const issue: IssueRecord = {
      id: state.nextId('issue'),
      repoId: repo.id,
      number: repo.nextIndex++,
      title,
      body: typeof form.body === 'string' ? form.body : '',
      state: 'open',
      authorId: c.get('user').id,
      labelIds: [],
      pull: { headRef: head, headSha: headCommit.id, baseRef, baseSha: baseCommit.id, draft: false, merged: false, mergeable: true },
      createdAt: now,
      updatedAt: now,
    };
    state.issues.set(issue.id, issue);
    return c.json(renderPullRequest(base(), state, repo, issue), 201);
  });

  // routers/api/v1/repo/issue_comment.go ListIssueCommentsAndTimeline: every comment and event of
  // the issue, oldest first, `since`/`before` on updated_at, paged by `page`/`limit`; its
  // X-Total-Count is the length of the page sent, not the total (SetTotalCountHeader(len(apiComments))).
  app.get('/api/v1/repos/:owner/:repo/issues/:index/timeline', (c) => {
    const issue = issueOf(c);
    if (!issue) return notFound(c);
    const repo = c.get('repo');
    const since = timeQuery(c.req.query('since'));
    const before = timeQuery(c.req.query('before'));
    if (since === null || before === null) return apiError(c, 422, 'parsing time "since" or "before": not RFC 3339');
    const inWindow = (updatedAt: string) =>
      (since === undefined || Date.parse(updatedAt) >= since) && (before === undefined || Date.parse(updatedAt) <= before);
    const entries = [
      ...state
        .issueComments(repo.id, issue.number)
        .map((comment) => ({ at: comment.createdAt, updatedAt: comment.updatedAt, render: () => renderCommentEntry(comment) })),
      ...state
        .issueTimeline(repo.id, issue.number)
        .map((entry) => ({ at: entry.createdAt, updatedAt: entry.updatedAt, render: () => renderTimeline(base(), state, repo, entry) })),
    ]
      .filter((e) => inWindow(e.updatedAt))
      .sort((a, b) => a.at.localeCompare(b.at));
    const listed = paginate(c, entries).map((e) => e.render());
    c.header('X-Total-Count', String(listed.length));
    c.header('Link', undefined);
    return c.json(listed);
  });
  const renderCommentEntry = (comment: CommentRecord) => ({
    ...renderComment(base(), state, state.repos.get(comment.repoId)!, comment),
    type: 'comment',
  });

  const labelsOf = (c: Context<Env>, issue: IssueRecord) =>
    issue.labelIds.map((id) => renderLabel(base(), c.get('repo'), state.labels.get(id)!));

  app.get('/api/v1/repos/:owner/:repo/issues/:index/labels', (c) => {
    const issue = issueOf(c);
    return issue ? c.json(labelsOf(c, issue)) : notFound(c);
  });

  const changeLabels = (mode: 'add' | 'replace') => async (c: Context<Env>) => {
    const issue = issueOf(c);
    if (!issue) return notFound(c);
    const repo = c.get('repo');
    if (repo.archived) return apiError(c, 423, 'repo is archived');
    if (!canWrite(c)) return apiError(c, 403, 'user does not have write access to issues');
    const raw = await jsonBody(c);
    const requested =
      raw && typeof raw === 'object' && Array.isArray((raw as { labels?: unknown }).labels) ? (raw as { labels: unknown[] }).labels : [];
    // Newer Gitea accepts ids or names (`[]any`); unknown ones are ignored, as in prepareForReplaceOrAdd.
    const ids = new Set<number>();
    for (const item of requested) {
      const label = state
        .repoLabels(repo.id)
        .find((l) =>
          typeof item === 'number' ? l.id === item : typeof item === 'string' ? l.name === item || String(l.id) === item : false,
        );
      if (label) ids.add(label.id);
    }
    const next = mode === 'replace' ? [] : [...issue.labelIds];
    for (const id of ids) {
      const label = state.labels.get(id)!;
      // Exclusive (scoped) labels replace any other label of the same scope.
      if (label.exclusive && label.name.includes('/')) {
        const scope = label.name.slice(0, label.name.lastIndexOf('/') + 1);
        for (let i = next.length - 1; i >= 0; i--) {
          const other = state.labels.get(next[i]!)!;
          if (other.id !== id && other.exclusive && other.name.startsWith(scope)) next.splice(i, 1);
        }
      }
      if (!next.includes(id)) next.push(id);
    }
    recordLabelChanges(issue, issue.labelIds, next, c.get('user').id);
    issue.labelIds = next.sort((a, b) => state.labels.get(a)!.name.localeCompare(state.labels.get(b)!.name));
    issue.updatedAt = state.timestamp();
    return c.json(labelsOf(c, issue), 200);
  };
  app.post('/api/v1/repos/:owner/:repo/issues/:index/labels', changeLabels('add'));
  app.put('/api/v1/repos/:owner/:repo/issues/:index/labels', changeLabels('replace'));

  app.delete('/api/v1/repos/:owner/:repo/issues/:index/labels/:id', (c) => {
    const issue = issueOf(c);
    if (!issue) return notFound(c);
    const repo = c.get('repo');
    if (repo.archived) return apiError(c, 423, 'repo is archived');
    if (!canWrite(c)) return apiError(c, 403, 'user does not have write access to issues');
    const id = Number(c.req.param('id'));
    const label = state.labels.get(id);
    if (!label || label.repoId !== repo.id) return apiError(c, 422, `label does not exist [label_id: ${c.req.param('id')}]`);
    const next = issue.labelIds.filter((l) => l !== id);
    recordLabelChanges(issue, issue.labelIds, next, c.get('user').id);
    issue.labelIds = next;
    return c.body(null, 204);
  });

  app.delete('/api/v1/repos/:owner/:repo/issues/:index/labels', (c) => {
    const issue = issueOf(c);
    if (!issue) return notFound(c);
    if (c.get('repo').archived) return apiError(c, 423, 'repo is archived');
    if (!canWrite(c)) return apiError(c, 403, 'user does not have write access to issues');
    recordLabelChanges(issue, issue.labelIds, [], c.get('user').id);
    issue.labelIds = [];
    return c.body(null, 204);
  });

  app.get('/api/v1/repos/:owner/:repo/labels', (c) => {
    const repo = c.get('repo');
    return c.json(paginate(c, state.repoLabels(repo.id)).map((l) => renderLabel(base(), repo, l)));
  });

  // Creating a label: writers only; name and color required; the color normalised
  // (label.NormalizeColor) and stored without '#'. Duplicate names are accepted.
  app.post('/api/v1/repos/:owner/:repo/labels', async (c) => {
    const repo = c.get('repo');
    if (!canWrite(c)) return apiError(c, 403, 'user should have a permission to write to a repo');
    const form = ((await jsonBody(c)) ?? {}) as Record<string, unknown>;
    const name = typeof form.name === 'string' ? form.name : '';
    if (name === '') return apiError(c, 422, '[Name]: Required');
    const color = normalizeColor(typeof form.color === 'string' ? form.color : '');
    if (color === undefined) return apiError(c, 422, `invalid color "${String(form.color ?? '')}"`);
    const label = {
      id: state.nextId('label'),
      repoId: repo.id,
      name,
      color,
      description: typeof form.description === 'string' ? form.description : '',
      exclusive: form.exclusive === true,
    };
    state.labels.set(label.id, label);
    return c.json(renderLabel(base(), repo, label), 201);
  });

  app.get('/api/v1/repos/:owner/:repo/pulls/:index', (c) => {
    const issue = issueOf(c);
    if (!issue?.pull) return notFound(c);
    return c.json(renderPullRequest(base(), state, c.get('repo'), issue));
  });

  app.get('/api/v1/repos/:owner/:repo/pulls/:index/reviews', (c) => {
    const issue = issueOf(c);
    if (!issue?.pull) return notFound(c);
    const repo = c.get('repo');
    // routers/api/v1/repo/pull_review.go ListPullReviews (SOURCES.md): every review of the pull
    // request in created_unix, id order, requested reviews (REQUEST_REVIEW) included; a PENDING
    // review is shown only to its author and site admins (convert.ToPullReviewList), yet
    // X-Total-Count counts it (CountReviews runs before that filter).
    const doer = c.get('user');
    const all = [...state.reviews.values()]
      .filter((r) => r.repoId === repo.id && r.number === issue.number)
      .sort((a, b) => a.submittedAt.localeCompare(b.submittedAt) || a.id - b.id);
    const shown = paginate(c, all).filter((r) => r.state !== 'PENDING' || doer.isAdmin || doer.id === r.authorId);
    return c.json(shown.map((r) => renderReview(base(), state, repo, r)));
  });

  // routers/api/v1/repo/branch.go GetBranch (route `/branches/*`): the branch from the git
  // repository, `protected` from the rules (modules/structs/repo_branch.go `Branch`).
  app.get('/api/v1/repos/:owner/:repo/branches/:branch{.+}', (c) => {
    const repo = c.get('repo');
    const name = c.req.param('branch');
    const head = readBranch(bareRepoPath(options.gitRoot(), repo.owner, repo.name), name);
    if (!head) return notFound(c, ['branch does not exist [name: ' + name + ']']);
    const rule = repo.protectedBranches.find((pattern) => globMatches(pattern, name));
    const permission = state.permission(c.get('user'), repo);
    const canWrite = permission === 'write' || permission === 'admin';
    const url = `${base()}/${repo.owner}/${repo.name}/commit/${head.id}`;
    return c.json({
      name,
      commit: { id: head.id, message: head.message, url, timestamp: head.timestamp, verification: null },
      protected: rule !== undefined,
      required_approvals: 0,
      enable_status_check: false,
      status_check_contexts: [],
      user_can_push: canWrite && rule === undefined,
      user_can_merge: canWrite,
      effective_branch_protection_name: rule ?? '',
    });
  });

  app.get('/api/v1/repos/:owner/:repo/collaborators/:collaborator/permission', (c) => {
    const doer = c.get('user');
    const repo = c.get('repo');
    const name = c.req.param('collaborator');
    // routers/api/v1/repo/collaborators.go GetRepoPermissions: only site admins, repository
    // admins and the user themself may ask.
    if (!doer.isAdmin && doer.login.toLowerCase() !== name.toLowerCase() && state.permission(doer, repo) !== 'admin') {
      return apiError(
        c,
        403,
        'Only admins can query all permissions, repo admins can query all repo permissions, collaborators can query only their own',
      );
    }
    const user = state.userByLogin(name);
    if (!user) return notFound(c, [`user redirect does not exist [name: ${name.toLowerCase()}]`]);
    const mode = state.accessModeName(user, repo, options.legacyOwnerPermission);
    return c.json({ permission: mode, role_name: mode, user: renderUser(base(), user) });
  });

  return app;
}

/** A branch protection rule name as a glob (`*` within a path segment, `**` across them). */
function globMatches(pattern: string, name: string): boolean {
  const source = pattern
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*'),
    )
    .join('.*');
  return new RegExp(`^${source}$`).test(name);
}

/**
 * A `since`/`before` query value: undefined when absent, null when not RFC 3339
 * (context.GetQueryBeforeSince parses with time.RFC3339), else epoch milliseconds.
 */
function timeQuery(value: string | undefined): number | undefined | null {
  if (value === undefined || value === '') return undefined;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

/** A stored time as Gitea compares it: whole seconds (timeutil.TimeStamp), in epoch milliseconds. */
function wholeSeconds(at: string): number {
  return Math.floor(Date.parse(at) / 1000) * 1000;
}

/** `rrggbb`, `#rrggbb`, `rgb` or `#rgb` (any case, trimmed) → `rrggbb`; anything else is refused. */
function normalizeColor(raw: string): string | undefined {
  const hex = raw.trim().replace(/^#/, '').toLowerCase();
  if (/^[0-9a-f]{6}$/.test(hex)) return hex;
  if (/^[0-9a-f]{3}$/.test(hex)) return [...hex].map((ch) => ch + ch).join('');
  return undefined;
}

/** `parseToken`: `?token=`, then `?access_token=`, then `Authorization: token X` / `Bearer X`. */
function findToken(c: Context): { token: string; scheme: 'query' | 'token' | 'bearer' } | undefined {
  const query = c.req.query('token') || c.req.query('access_token');
  if (query) return { token: query, scheme: 'query' };
  const header = c.req.header('authorization');
  if (!header) return undefined;
  const fields = header.trim().split(/\s+/);
  if (fields.length !== 2) return undefined;
  const [scheme, token] = fields as [string, string];
  if (scheme === 'token') return { token, scheme: 'token' };
  if (scheme.toLowerCase() === 'bearer') return { token, scheme: 'bearer' };
  return undefined;
}

/**
 * Basic auth with a personal access token, as `user:TOKEN` or `TOKEN:x-oauth-basic` (passwords
 * are not modelled: the fake has no accounts with passwords).
 */
function findBasic(c: Context): { token: string; scheme: 'basic'; login?: string } | undefined {
  const match = /^basic\s+(\S+)$/i.exec(c.req.header('authorization')?.trim() ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const [name, password] = [decoded.slice(0, colon), decoded.slice(colon + 1)];
  if (password === 'x-oauth-basic' || password === '') return { token: name, scheme: 'basic' };
  return { token: password, scheme: 'basic', login: name };
}

/** Compares every stored token in constant time over equal-length digests. */
function lookupToken(tokens: Map<string, number>, presented: string): number | undefined {
  const digest = crypto.createHash('sha256').update(presented).digest();
  let match: number | undefined;
  for (const [token, userId] of tokens) {
    if (crypto.timingSafeEqual(digest, crypto.createHash('sha256').update(token).digest())) match = userId;
  }
  return match;
}

async function jsonBody(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    return undefined;
  }
}

async function stringField(c: Context, field: string): Promise<string | undefined> {
  const body = await jsonBody(c);
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[field] : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Gitea's list paging: `?page=` (1-based) and `?limit=` (default 30, capped at 50), the total in
 * `X-Total-Count` and next/last/first/prev links in `Link`.
 */
function paginate<T>(c: Context, all: readonly T[]): T[] {
  const page = Math.max(1, Number(c.req.query('page')) || 1);
  const limit = Math.min(50, Math.max(1, Number(c.req.query('limit')) || 30));
  const last = Math.max(1, Math.ceil(all.length / limit));
  const link = (p: number, rel: string) => {
    const url = new URL(c.req.url);
    url.searchParams.set('page', String(p));
    url.searchParams.set('limit', String(limit));
    return `<${url.toString()}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (page < last) links.push(link(page + 1, 'next'), link(last, 'last'));
  if (page > 1) links.push(link(1, 'first'), link(page - 1, 'prev'));
  c.header('X-Total-Count', String(all.length));
  if (links.length > 0) c.header('Link', links.join(','));
  return all.slice((page - 1) * limit, page * limit);
}
