/**
 * The fake GitLab's REST API (`/api/v4`), answering as GitLab does: error bodies `{ message }`
 * (`401 Unauthorized`, `404 Project Not Found`, `404 Not found`, `403 Forbidden`), offset
 * pagination with `x-page`/`x-next-page`/`x-total` and a `Link` header, projects by id or by
 * URL-encoded path, issues and merge requests by `iid` in two sequences, labels as names on items,
 * `add_labels` creating an unknown name (a GitLab quirk), private projects 404 to outsiders and
 * writes 403 to members whose access level is too low. Sources in SOURCES.md.
 */
import { Hono, type Context } from 'hono';
import type {
  AccessLevel,
  FakeGitLabState,
  HookRecord,
  ItemRecord,
  LabelRecord,
  ProjectRecord,
  ReviewerRecord,
  UserRecord,
} from './state.js';

/** The hook flags the fake knows (GitLab's `*_events` attributes). */
export const HOOK_FLAGS = [
  'push_events',
  'issues_events',
  'confidential_issues_events',
  'merge_requests_events',
  'note_events',
  'confidential_note_events',
  'tag_push_events',
  'releases_events',
  'pipeline_events',
  'wiki_page_events',
] as const;

type Env = { Variables: { user: UserRecord | undefined } };

export function createFakeGitLabApp(
  state: FakeGitLabState,
  hooks: {
    onRequest?: (c: Context) => Response | undefined;
    resend?: (project: ProjectRecord, eventId: number) => Promise<number | undefined>;
    /** Delivers an event to the project's hooks subscribed to `flag`, after the answer (GitLab runs hooks in a worker). */
    emit?: (project: ProjectRecord, flag: string, event: string, body: string) => void;
  },
) {
  const app = new Hono<Env>().basePath('/api/v4');
  const fail = (c: Context, status: number, message: string) => c.json({ message }, status as 400);

  app.use('*', async (c, next) => {
    const faulted = hooks.onRequest?.(c);
    if (faulted) return faulted;
    const bearer = /^Bearer (.+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
    const token = c.req.header('private-token') ?? bearer;
    if (token !== undefined) {
      const username = state.tokens.get(token);
      if (!username) return fail(c, 401, '401 Unauthorized');
      c.set('user', state.user(username));
    }
    await next();
  });

  const me = (c: Context<Env>) => c.get('user');
  const base = (c: Context) => new URL(c.req.url).origin;

  /** GitLab's offset pagination: `per_page` (default 20, at most 100), `page`, x-* headers and `Link`. */
  const page = <T>(c: Context, items: T[]): Response => {
    const perPage = Math.min(100, Math.max(1, Number(c.req.query('per_page') ?? 20) || 20));
    const number = Math.max(1, Number(c.req.query('page') ?? 1) || 1);
    const pages = Math.max(1, Math.ceil(items.length / perPage));
    const url = new URL(c.req.url);
    const link = (n: number, rel: string) => {
      url.searchParams.set('page', String(n));
      url.searchParams.set('per_page', String(perPage));
      return `<${url.toString()}>; rel="${rel}"`;
    };
    const links = [];
    if (number > 1) links.push(link(number - 1, 'prev'));
    if (number < pages) links.push(link(number + 1, 'next'));
    links.push(link(1, 'first'), link(pages, 'last'));
    c.header('Link', links.join(', '));
    c.header('x-page', String(number));
    c.header('x-per-page', String(perPage));
    c.header('x-next-page', number < pages ? String(number + 1) : '');
    c.header('x-prev-page', number > 1 ? String(number - 1) : '');
    c.header('x-total', String(items.length));
    c.header('x-total-pages', String(pages));
    return c.json(items.slice((number - 1) * perPage, number * perPage));
  };

  const user = (u: UserRecord | string | undefined) => {
    const record = typeof u === 'string' ? state.user(u) : u;
    if (!record) return null;
    return {
      id: record.id,
      username: record.username,
      name: record.name,
      state: 'active',
      avatar_url: null,
      web_url: `https://gitlab.invalid/${record.username}`,
      bot: record.bot,
    };
  };
  const pathOf = (p: ProjectRecord) => `${p.namespace}/${p.path}`;
  const webUrl = (c: Context, p: ProjectRecord) => `${base(c)}/${pathOf(p)}`;
  const labelJson = (l: LabelRecord) => ({
    id: l.id,
    name: l.name,
    color: l.color,
    text_color: '#FFFFFF',
    description: l.description || null,
    is_project_label: true,
  });
  const issueJson = (c: Context, p: ProjectRecord, i: ItemRecord) => ({
    id: i.id,
    iid: i.iid,
    project_id: p.id,
    title: i.title,
    description: i.description || null,
    state: i.state,
    author: user(i.author),
    labels: i.labels,
    web_url: `${webUrl(c, p)}/-/issues/${i.iid}`,
    created_at: i.createdAt,
    updated_at: i.updatedAt,
    closed_at: null,
  });
  const mrJson = (c: Context, p: ProjectRecord, m: ItemRecord) => ({
    id: m.id,
    iid: m.iid,
    project_id: p.id,
    title: m.title,
    description: m.description || null,
    state: m.state,
    draft: m.mr!.draft,
    work_in_progress: m.mr!.draft,
    author: user(m.author),
    labels: m.labels,
    source_branch: m.mr!.source,
    target_branch: m.mr!.target,
    source_project_id: p.id,
    target_project_id: p.id,
    sha: m.mr!.sha,
    reviewers: m.mr!.reviewers.map((r) => user(r.username)),
    merge_status: 'can_be_merged',
    detailed_merge_status: 'mergeable',
    web_url: `${webUrl(c, p)}/-/merge_requests/${m.iid}`,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
    merged_at: m.state === 'merged' ? m.updatedAt : null,
  });
  const noteJson = (kind: 'Issue' | 'MergeRequest', item: ItemRecord, n: ItemRecord['notes'][number]) => ({
    id: n.id,
    type: null,
    body: n.body,
    author: user(n.author),
    created_at: n.createdAt,
    updated_at: n.updatedAt,
    system: n.system,
    noteable_id: item.id,
    noteable_type: kind,
    noteable_iid: item.iid,
    resolvable: false,
    confidential: false,
    internal: false,
  });
  const hookJson = (p: ProjectRecord, h: HookRecord) => ({
    id: h.id,
    url: h.url,
    project_id: p.id,
    ...Object.fromEntries(HOOK_FLAGS.map((f) => [f, h.flags[f] ?? false])),
    push_events_branch_filter: h.branchFilter,
    enable_ssl_verification: true,
    alert_status: h.alertStatus,
    disabled_until: null,
    created_at: state.timestamp(),
  });

  /** The project by id or URL-encoded path, or GitLab's 404 when it does not exist or may not be seen. */
  function projectOf(c: Context<Env>): ProjectRecord | Response {
    const id = decodeURIComponent(c.req.param('id') ?? '');
    const project = /^\d+$/.test(id) ? [...state.projects.values()].find((p) => p.id === Number(id)) : state.project(id);
    const caller = me(c);
    const visible =
      project &&
      (project.visibility === 'public' ||
        (project.visibility === 'internal' && caller) ||
        (caller && state.accessOf(project, caller.username) >= 10));
    return visible ? project : fail(c, 404, '404 Project Not Found');
  }
  /** Writes need an account and an access level: GitLab answers 403 to a member below it. */
  function may(c: Context<Env>, p: ProjectRecord, level: AccessLevel): Response | undefined {
    const caller = me(c);
    if (!caller) return fail(c, 401, '401 Unauthorized');
    if (state.accessOf(p, caller.username) < level) return fail(c, 403, '403 Forbidden');
    return undefined;
  }
  const itemsOf = (p: ProjectRecord, kind: 'issues' | 'merge_requests') => (kind === 'issues' ? p.issues : p.mergeRequests);

  app.get('/user', (c) => {
    const caller = me(c);
    return caller ? c.json({ ...user(caller), is_admin: false }) : fail(c, 401, '401 Unauthorized');
  });
  app.get('/users', (c) => {
    const wanted = c.req.query('username');
    const found = wanted ? state.user(wanted) : undefined;
    return c.json(found ? [user(found)] : []);
  });

  const P = '/projects/:id';
  app.get(P, (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const caller = me(c);
    const level = caller ? state.accessOf(p, caller.username) : 0;
    return c.json({
      id: p.id,
      name: p.path,
      path: p.path,
      path_with_namespace: pathOf(p),
      // A subgroup's namespace: `path` and `name` its own segment, `full_path` every group above it too.
      namespace: {
        id: p.id + 1,
        name: p.namespace.split('/').at(-1),
        path: p.namespace.split('/').at(-1),
        kind: 'group',
        full_path: p.namespace,
      },
      archived: p.archived,
      visibility: p.visibility,
      default_branch: p.defaultBranch,
      web_url: webUrl(c, p),
      http_url_to_repo: `${webUrl(c, p)}.git`,
      permissions: { project_access: level > 0 ? { access_level: level, notification_level: 3 } : null, group_access: null },
    });
  });

  app.get(`${P}/members/all/:user_id`, (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const wanted = [...state.users.values()].find((u) => u.id === Number(c.req.param('user_id')));
    const level = wanted ? state.accessOf(p, wanted.username) : 0;
    if (!wanted || level === 0) return fail(c, 404, '404 Not found');
    return c.json({ id: wanted.id, username: wanted.username, name: wanted.name, state: 'active', access_level: level });
  });

  app.get(`${P}/labels`, (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    return page(c, p.labels.map(labelJson));
  });
  app.post(`${P}/labels`, async (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const denied = may(c, p, 20);
    if (denied) return denied;
    const body = (await c.req.json()) as { name?: string; color?: string; description?: string };
    if (!body.name || !body.color) return fail(c, 400, '400 Bad request - name, color are missing');
    if (p.labels.some((l) => l.name.toLowerCase() === body.name!.toLowerCase())) return fail(c, 409, 'Label already exists');
    const label = { id: state.id(), name: body.name, color: body.color.toLowerCase(), description: body.description ?? '' };
    p.labels.push(label);
    return c.json(labelJson(label), 201);
  });

  for (const kind of ['issues', 'merge_requests'] as const) {
    const json = (c: Context, p: ProjectRecord, i: ItemRecord) => (kind === 'issues' ? issueJson(c, p, i) : mrJson(c, p, i));
    const noteable = kind === 'issues' ? 'Issue' : 'MergeRequest';
    const itemOf = (c: Context<Env>, p: ProjectRecord): ItemRecord | Response =>
      itemsOf(p, kind).find((i) => i.iid === Number(c.req.param('iid'))) ?? fail(c, 404, '404 Not found');

    app.get(`${P}/${kind}`, (c) => {
      const p = projectOf(c);
      if (p instanceof Response) return p;
      const after = c.req.query('updated_after');
      const wantedState = c.req.query('state');
      const items = itemsOf(p, kind)
        .filter((i) => !after || Date.parse(i.updatedAt) >= Date.parse(after))
        .filter((i) => !wantedState || wantedState === 'all' || i.state === wantedState)
        .sort((a, b) => Date.parse(b.updatedAt) - Date.parse(a.updatedAt) || b.id - a.id);
      return page(
        c,
        items.map((i) => json(c, p, i)),
      );
    });
    app.get(`${P}/${kind}/:iid`, (c) => {
      const p = projectOf(c);
      if (p instanceof Response) return p;
      const item = itemOf(c, p);
      return item instanceof Response ? item : c.json(json(c, p, item));
    });
    app.put(`${P}/${kind}/:iid`, async (c) => {
      const p = projectOf(c);
      if (p instanceof Response) return p;
      const item = itemOf(c, p);
      if (item instanceof Response) return item;
      const denied = may(c, p, 15);
      if (denied) return denied;
      const body = (await c.req.json()) as { add_labels?: string; remove_labels?: string; reviewer_ids?: unknown };
      const actor = me(c)!.username;
      const at = state.timestamp();
      // `reviewer_ids` replaces the reviewers whole; GitLab drops it (no error) for a caller below
      // Developer (issuable_base_service.rb filters what `admin_merge_request` may not set).
      if (kind === 'merge_requests' && Array.isArray(body.reviewer_ids) && state.accessOf(p, actor) >= 30) {
        const wanted = body.reviewer_ids.flatMap((id) => [...state.users.values()].filter((u) => u.id === id));
        item.mr!.reviewers = wanted.map(
          (u) =>
            item.mr!.reviewers.find((r) => r.username.toLowerCase() === u.username.toLowerCase()) ?? {
              username: u.username,
              state: 'unreviewed',
              reRequested: false,
              createdAt: at,
            },
        );
      }
      for (const name of (body.add_labels ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)) {
        let label = p.labels.find((l) => l.name.toLowerCase() === name.toLowerCase());
        // GitLab makes a project label of a name it does not know.
        if (!label) p.labels.push((label = { id: state.id(), name, color: '#6699cc', description: '' }));
        if (!item.labels.includes(label.name)) {
          item.labels.push(label.name);
          item.labelEvents.push({ id: state.id(), user: actor, label: label.name, action: 'add', createdAt: at });
        }
      }
      for (const name of (body.remove_labels ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)) {
        const index = item.labels.findIndex((l) => l.toLowerCase() === name.toLowerCase());
        if (index >= 0) {
          item.labelEvents.push({ id: state.id(), user: actor, label: item.labels[index]!, action: 'remove', createdAt: at });
          item.labels.splice(index, 1);
        }
      }
      item.updatedAt = at;
      return c.json(json(c, p, item));
    });
    app.get(`${P}/${kind}/:iid/notes`, (c) => {
      const p = projectOf(c);
      if (p instanceof Response) return p;
      const item = itemOf(c, p);
      if (item instanceof Response) return item;
      // Default order is newest first (`sort=desc`, `order_by=created_at`).
      const notes = [...item.notes].sort((a, b) => a.id - b.id);
      if (c.req.query('sort') !== 'asc') notes.reverse();
      return page(
        c,
        notes.map((n) => noteJson(noteable, item, n)),
      );
    });
    app.post(`${P}/${kind}/:iid/notes`, async (c) => {
      const p = projectOf(c);
      if (p instanceof Response) return p;
      const item = itemOf(c, p);
      if (item instanceof Response) return item;
      const denied = may(c, p, 10);
      if (denied) return denied;
      const body = (await c.req.json()) as { body?: string };
      if (!body.body) return fail(c, 400, '400 Bad request - body is missing');
      const at = state.timestamp();
      const note = { id: state.id(), author: me(c)!.username, body: body.body, system: false, createdAt: at, updatedAt: at, awards: [] };
      item.notes.push(note);
      item.updatedAt = at;
      return c.json(noteJson(noteable, item, note), 201);
    });
    app.put(`${P}/${kind}/:iid/notes/:note_id`, async (c) => {
      const p = projectOf(c);
      if (p instanceof Response) return p;
      const item = itemOf(c, p);
      if (item instanceof Response) return item;
      const note = item.notes.find((n) => n.id === Number(c.req.param('note_id')));
      if (!note) return fail(c, 404, '404 Note Not Found');
      if (note.author.toLowerCase() !== me(c)?.username.toLowerCase()) return fail(c, 403, '403 Forbidden');
      note.body = ((await c.req.json()) as { body: string }).body;
      note.updatedAt = state.timestamp();
      return c.json(noteJson(noteable, item, note));
    });
    app.post(`${P}/${kind}/:iid/notes/:note_id/award_emoji`, async (c) => {
      const p = projectOf(c);
      if (p instanceof Response) return p;
      const item = itemOf(c, p);
      if (item instanceof Response) return item;
      const note = item.notes.find((n) => n.id === Number(c.req.param('note_id')));
      if (!note) return fail(c, 404, '404 Note Not Found');
      const caller = me(c);
      if (!caller) return fail(c, 401, '401 Unauthorized');
      const name = ((await c.req.json()) as { name: string }).name;
      if (note.awards.some((a) => a.user === caller.username && a.name === name))
        return fail(c, 404, '404 Award Emoji Name has already been taken');
      const award = { id: state.id(), user: caller.username, name };
      note.awards.push(award);
      return c.json({ id: award.id, name, user: user(caller), awardable_id: note.id, awardable_type: 'Note' }, 201);
    });
    app.get(`${P}/${kind}/:iid/resource_label_events`, (c) => {
      const p = projectOf(c);
      if (p instanceof Response) return p;
      const item = itemOf(c, p);
      if (item instanceof Response) return item;
      return page(
        c,
        item.labelEvents.map((e) => {
          const label = p.labels.find((l) => l.name === e.label);
          return {
            id: e.id,
            user: user(e.user),
            created_at: e.createdAt,
            resource_type: noteable,
            resource_id: item.id,
            label: label ? { id: label.id, name: label.name, color: label.color, description: label.description || null } : null,
            action: e.action,
          };
        }),
      );
    });
  }

  // A merge request's diff versions, newest first: one per push, naming its head
  // (doc/api/merge_requests.md, "Get merge request diff versions").
  app.get(`${P}/merge_requests/:iid/versions`, (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const mr = p.mergeRequests.find((m) => m.iid === Number(c.req.param('iid')));
    if (!mr) return fail(c, 404, '404 Not found');
    return page(
      c,
      [...mr.mr!.versions].reverse().map((v) => ({
        id: v.id,
        head_commit_sha: v.headSha,
        base_commit_sha: '0'.repeat(40),
        start_commit_sha: '0'.repeat(40),
        created_at: v.createdAt,
        merge_request_id: mr.id,
        state: 'collected',
        real_size: '1',
      })),
    );
  });
  app.get(`${P}/merge_requests/:iid/approvals`, (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const mr = p.mergeRequests.find((m) => m.iid === Number(c.req.param('iid')));
    if (!mr) return fail(c, 404, '404 Not found');
    return c.json({
      id: mr.id,
      iid: mr.iid,
      project_id: p.id,
      approved: mr.mr!.approvedBy.length > 0,
      approved_by: mr.mr!.approvedBy.map((u) => ({ user: user(u) })),
    });
  });

  // A merge request's reviewers with their states ("Get single merge request reviewers", doc/api/merge_requests.md).
  app.get(`${P}/merge_requests/:iid/reviewers`, (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const mr = p.mergeRequests.find((m) => m.iid === Number(c.req.param('iid')));
    if (!mr) return fail(c, 404, '404 Not found');
    return c.json(mr.mr!.reviewers.map((r) => ({ user: user(r.username), state: r.state, created_at: r.createdAt })));
  });

  /**
   * Publishing the caller's pending review, with a summary note and a reviewer state (gitlab-org/gitlab
   * lib/api/draft_notes.rb, "Publish all pending draft notes": `reviewer_state` requested_changes |
   * reviewed, else 400 from Grape's `values`; `note`; 204). The state is set as
   * app/services/merge_requests/update_reviewer_state_service.rb does, whose result the endpoint
   * drops: the caller needs update_merge_request (Developer, or the author); `requested_changes`
   * writes the system note `requested changes` even when the caller is no reviewer; a caller who
   * is not a reviewer is made one only under `assign_reviewer_on_review_submission` (and never the
   * author), else nothing changes and the answer is still 204; an approving reviewer may only go to
   * `requested_changes`; the change fires the Merge Request Hook `update` with `changes.reviewers`
   * (every reviewer before and after, `state` and `re_requested` beside the user's hook attributes),
   * and `requested_changes` then takes the caller's approval back with no note and no hook of its own
   * (base_service.rb `remove_approval`: skip_system_note, skip_notification). The fake keeps no draft
   * notes: there are none to publish.
   */
  app.post(`${P}/merge_requests/:iid/draft_notes/bulk_publish`, async (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const caller = me(c);
    if (!caller) return fail(c, 401, '401 Unauthorized');
    const mr = p.mergeRequests.find((m) => m.iid === Number(c.req.param('iid')));
    if (!mr) return fail(c, 404, '404 Not found');
    const text = await c.req.text();
    const body = (text.trim() === '' ? {} : JSON.parse(text)) as { reviewer_state?: unknown; note?: unknown };
    const wanted = body.reviewer_state;
    if (wanted !== undefined && wanted !== null && wanted !== 'requested_changes' && wanted !== 'reviewed')
      return c.json({ error: 'reviewer_state does not have a valid value' }, 400);
    if (typeof body.note === 'string' && body.note !== '') {
      const at = state.timestamp();
      mr.notes.push({ id: state.id(), author: caller.username, body: body.note, system: false, createdAt: at, updatedAt: at, awards: [] });
      mr.updatedAt = at;
    }
    if (wanted === 'requested_changes' || wanted === 'reviewed') setReviewerState(c, p, mr, caller, wanted);
    return c.body(null, 204);
  });

  function setReviewerState(c: Context, p: ProjectRecord, mr: ItemRecord, caller: UserRecord, wanted: 'requested_changes' | 'reviewed') {
    const isAuthor = mr.author.toLowerCase() === caller.username.toLowerCase();
    if (state.accessOf(p, caller.username) < 30 && !isAuthor) return; // "Invalid permissions"
    const before = reviewersHookAttrs(mr.mr!.reviewers);
    let reviewer = mr.mr!.reviewers.find((r) => r.username.toLowerCase() === caller.username.toLowerCase());
    if (!reviewer && state.features.assignReviewerOnSubmission && !isAuthor) {
      reviewer = { username: caller.username, state: 'unreviewed', reRequested: false, createdAt: state.timestamp() };
      mr.mr!.reviewers.push(reviewer);
    }
    const at = state.timestamp();
    if (wanted === 'requested_changes') {
      mr.notes.push({
        id: state.id(),
        author: caller.username,
        body: 'requested changes',
        system: true,
        createdAt: at,
        updatedAt: at,
        awards: [],
      });
      mr.updatedAt = at;
    }
    if (!reviewer) return; // "Reviewer not found"
    if (reviewer.state === 'approved' && wanted !== 'requested_changes') return; // "Reviewer has approved"
    reviewer.state = wanted;
    mr.updatedAt = at;
    const after = reviewersHookAttrs(mr.mr!.reviewers);
    const changes = JSON.stringify(before) === JSON.stringify(after) ? {} : { reviewers: { previous: before, current: after } };
    const hook = mergeRequestHook(c, p, mr, caller, 'update', changes);
    queueMicrotask(() => hooks.emit?.(p, 'merge_requests_events', 'Merge Request Hook', JSON.stringify(hook)));
    if (wanted === 'requested_changes')
      mr.mr!.approvedBy = mr.mr!.approvedBy.filter((u) => u.toLowerCase() !== caller.username.toLowerCase());
  }

  /** A user in a webhook (User#hook_attrs; the e-mail redacted, as GitLab sends it to hooks). */
  const hookUser = (username: string) => {
    const record = state.user(username);
    return {
      id: record?.id ?? 0,
      name: record?.name ?? username,
      username: record?.username ?? username,
      avatar_url: `https://www.gravatar.com/avatar/${username}?s=80&d=identicon`,
      email: '[REDACTED]',
    };
  };
  /** Every reviewer with its state (Issuable#reviewers_hook_attrs). */
  const reviewersHookAttrs = (reviewers: ReviewerRecord[]) =>
    reviewers.map((r) => ({ ...hookUser(r.username), state: r.state, re_requested: r.reRequested }));
  /** GitLab's webhook time: `2017-09-15 16:50:55 UTC`. */
  const hookTime = (iso: string) => `${iso.slice(0, 19).replace('T', ' ')} UTC`;

  /** A Merge Request Hook body, in the shape of the webhook events documentation's example (test/fixtures/gitlab/merge-request.json). */
  function mergeRequestHook(c: Context, p: ProjectRecord, m: ItemRecord, actor: UserRecord, action: string, changes: object) {
    const web = webUrl(c, p);
    const projectHook = {
      id: p.id,
      name: p.path,
      description: '',
      web_url: web,
      avatar_url: null,
      git_ssh_url: `git@${new URL(web).host}:${pathOf(p)}.git`,
      git_http_url: `${web}.git`,
      namespace: p.namespace.split('/').at(-1),
      visibility_level: p.visibility === 'public' ? 20 : p.visibility === 'internal' ? 10 : 0,
      path_with_namespace: pathOf(p),
      default_branch: p.defaultBranch,
      ci_config_path: null,
      homepage: web,
      url: `git@${new URL(web).host}:${pathOf(p)}.git`,
      ssh_url: `git@${new URL(web).host}:${pathOf(p)}.git`,
      http_url: `${web}.git`,
    };
    const labels = m.labels.map((name) => {
      const label = p.labels.find((l) => l.name === name);
      return { id: label?.id ?? 0, title: name, color: label?.color ?? '#6699cc', project_id: p.id, type: 'ProjectLabel' };
    });
    const author = state.user(m.author);
    return {
      object_kind: 'merge_request',
      event_type: 'merge_request',
      user: hookUser(actor.username),
      project: projectHook,
      repository: { name: p.path, url: projectHook.git_ssh_url, description: '', homepage: web },
      object_attributes: {
        id: m.id,
        iid: m.iid,
        target_branch: m.mr!.target,
        source_branch: m.mr!.source,
        source_project_id: p.id,
        target_project_id: p.id,
        author_id: author?.id ?? 0,
        reviewer_ids: m.mr!.reviewers.map((r) => state.user(r.username)?.id ?? 0),
        title: m.title,
        created_at: hookTime(m.createdAt),
        updated_at: hookTime(m.updatedAt),
        state: m.state,
        merge_status: 'can_be_merged',
        detailed_merge_status: 'mergeable',
        description: m.description,
        url: `${web}/-/merge_requests/${m.iid}`,
        source: projectHook,
        target: projectHook,
        last_commit: {
          id: m.mr!.sha,
          message: 'fake commit',
          timestamp: m.updatedAt,
          url: `${web}/-/commit/${m.mr!.sha}`,
          author: { name: m.author, email: '[REDACTED]' },
        },
        work_in_progress: m.mr!.draft,
        draft: m.mr!.draft,
        labels,
        action,
      },
      labels,
      changes,
      ...(m.mr!.reviewers.length ? { reviewers: reviewersHookAttrs(m.mr!.reviewers) } : {}),
    };
  }

  // Hooks need Maintainer (40); GitLab answers 403 to a Developer.
  app.get(`${P}/hooks`, (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const denied = may(c, p, 40);
    if (denied) return denied;
    return page(
      c,
      p.hooks.map((h) => hookJson(p, h)),
    );
  });
  const flagsFrom = (body: Record<string, unknown>, old?: Record<string, boolean>) =>
    Object.fromEntries(HOOK_FLAGS.map((f) => [f, typeof body[f] === 'boolean' ? (body[f] as boolean) : (old?.[f] ?? f === 'push_events')]));
  app.post(`${P}/hooks`, async (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const denied = may(c, p, 40);
    if (denied) return denied;
    const body = (await c.req.json()) as Record<string, unknown>;
    if (typeof body.url !== 'string' || !body.url) return fail(c, 400, '400 Bad request - url is missing');
    const hook: HookRecord = {
      id: state.id(),
      url: body.url,
      token: typeof body.token === 'string' ? body.token : '',
      // `push_events` is on unless the request says otherwise.
      flags: flagsFrom(body),
      branchFilter: typeof body.push_events_branch_filter === 'string' ? body.push_events_branch_filter : '',
      alertStatus: 'executable',
      failures: 0,
      uuid: crypto.randomUUID(),
    };
    p.hooks.push(hook);
    return c.json(hookJson(p, hook), 201);
  });
  app.put(`${P}/hooks/:hook_id`, async (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const denied = may(c, p, 40);
    if (denied) return denied;
    const hook = p.hooks.find((h) => h.id === Number(c.req.param('hook_id')));
    if (!hook) return fail(c, 404, '404 Not found');
    const body = (await c.req.json()) as Record<string, unknown>;
    if (typeof body.url === 'string') hook.url = body.url;
    // A token left out keeps the hook's.
    if (typeof body.token === 'string') hook.token = body.token;
    if (typeof body.push_events_branch_filter === 'string') hook.branchFilter = body.push_events_branch_filter;
    hook.flags = flagsFrom(body, hook.flags);
    return c.json(hookJson(p, hook));
  });
  app.delete(`${P}/hooks/:hook_id`, (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const denied = may(c, p, 40);
    if (denied) return denied;
    const index = p.hooks.findIndex((h) => h.id === Number(c.req.param('hook_id')));
    if (index < 0) return fail(c, 404, '404 Not found');
    p.hooks.splice(index, 1);
    return c.body(null, 204);
  });
  app.get(`${P}/hooks/:hook_id/events`, (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const denied = may(c, p, 40);
    if (denied) return denied;
    const id = Number(c.req.param('hook_id'));
    return page(
      c,
      p.hookEvents
        .filter((e) => e.hook === id)
        .map((e) => ({
          id: e.id,
          trigger: e.trigger,
          request_data: e.body,
          response_status: String(e.status),
          url: p.hooks.find((h) => h.id === id)?.url,
        })),
    );
  });
  app.post(`${P}/hooks/:hook_id/events/:event_id/resend`, async (c) => {
    const p = projectOf(c);
    if (p instanceof Response) return p;
    const denied = may(c, p, 40);
    if (denied) return denied;
    const status = await hooks.resend?.(p, Number(c.req.param('event_id')));
    if (status === undefined) return fail(c, 404, '404 Not found');
    return c.json({ response_status: status }, 201);
  });

  app.notFound((c) => fail(c, 404, '404 Not Found'));
  return app;
}
