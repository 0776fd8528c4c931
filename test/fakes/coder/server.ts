import { randomUUID, createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ACTIVE_JOB_STATUSES,
  latestBuild,
  newBuild,
  renderBuild,
  renderUser,
  renderWorkspace,
  workspaceStatus,
  type FakeBuild,
  type FakeTemplate,
  type FakeUser,
  type FakeWorkspaceRecord,
  type Transition,
} from './model.js';
import { until } from '../../helpers/until.js';
import { WORKSPACE_PARAMETERS } from '../../../src/workspaces/index.js';

/**
 * A fake Coder (REST API v2) on 127.0.0.1, following reference/coder/API.md: session-token auth,
 * workspace create/lookup/list, builds that move through their statuses on a timer, 409/410
 * bodies, the substring `name:` filter, `owner:` by username only, pagination, build cancels
 * with coderd's 400s, `GET /users/{user}`, a template and its version's rich parameters (coder/coder
 * docs/reference/api/templates.md, coderd/templateversions.go); plus fault injection for tests.
 */

export interface FakeCoderOptions {
  /** Time between two steps of a build job (pending → running → done). @default 5 */
  stepMs?: number;
  /** Session token accepted for the default user. @default a random token */
  token?: string;
  /** Username of the token's user. @default 'baton' */
  username?: string;
  now?: () => number;
}

type Match = (req: { method: string; path: string }) => boolean;

export interface SeedWorkspace {
  name: string;
  /** Username of the owner (created when unknown). @default the token's user */
  owner?: string;
  /** @default the default template */
  templateId?: string;
  status?: 'pending' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed' | 'canceled' | 'deleting';
  /** Epoch ms. @default now */
  createdAt?: number;
  /** Keep the seeded transitional build where it is (e.g. stuck in `stopping`). */
  stuck?: boolean;
  /** Values its builds were made with (only the template's parameters are kept, as Coder does). */
  parameters?: Record<string, string>;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: string;
  status: number | 'dropped';
  body: unknown;
  /** Whether the request carried the right token (the token itself is never recorded). */
  authenticated: boolean;
}

export interface WorkspaceSnapshot {
  id: string;
  name: string;
  owner: string;
  templateId: string;
  status: string;
  transition: Transition;
  deleted: boolean;
  createdAt: number;
  ttlMs: number | null;
  /** What the request sent, undeclared parameters included. */
  richParameters: Record<string, string>;
  /** The latest build's id. */
  buildId: string;
  /** What Coder kept on the latest build (`GET /workspacebuilds/{id}/parameters`). */
  buildParameters: Record<string, string>;
  transitions: Transition[];
}

export interface FakeCoder {
  readonly url: string;
  readonly token: string;
  readonly user: FakeUser;
  readonly template: FakeTemplate;
  readonly requests: RecordedRequest[];
  addUser(username: string): FakeUser;
  /** Another template (for "not baton's" workspaces). */
  addTemplate(name: string, parameters?: FakeTemplate['parameters']): FakeTemplate;
  seedWorkspace(seed: SeedWorkspace): WorkspaceSnapshot;
  /** Every workspace, deleted ones too unless `live` is set. */
  workspaces(options?: { live?: boolean }): WorkspaceSnapshot[];
  workspace(name: string, owner?: string): WorkspaceSnapshot | undefined;
  /** Waits until no build job is active (pending/running/canceling), stuck ones aside. */
  settle(timeoutMs?: number): Promise<void>;
  faults: {
    /** Delay before every answer. */
    latencyMs: number;
    /** The next `count` matching requests are answered `status` (5xx by default) without effect. */
    failNext(count: number, options?: { status?: number; body?: unknown; match?: Match }): void;
    /**
     * The next `count` matching requests lose their connection (socket destroyed). With
     * `afterHandling`, the request takes effect first and only the answer is lost.
     */
    dropNext(count: number, options?: { afterHandling?: boolean; match?: Match }): void;
    /** The next `count` matching requests are answered only after `ms`. */
    delayNext(count: number, ms: number, options?: { match?: Match }): void;
    /**
     * The next matching request waits, unhandled, until `release()`: `reached` resolves when it
     * arrives, so a test can change the world between a client's decision and Coder's answer.
     */
    pauseNext(options?: { match?: Match }): { reached: Promise<void>; release(): void };
    /** The next `count` builds of this transition end `failed` (e.g. a create whose start fails). */
    failNextBuilds(count: number, transition: Transition, error?: string): void;
    /** The next `count` builds of this transition stay `running` until cancelled. */
    stickNextBuilds(count: number, transition: Transition): void;
    /** While held, build jobs do not advance. */
    holdBuilds(held: boolean): void;
    /** Stuck builds (see `stickNextBuilds`) finish on the next step, as if the provisioner came back. */
    releaseStuckBuilds(): void;
  };
  close(): Promise<void>;
}

const NOT_FOUND = { message: 'Resource not found or you do not have access to this resource' };

/** What deploy/coder/ declares: every parameter baton sends, the run's identity without a default. */
function batonParameters(): FakeTemplate['parameters'] {
  const required = ['task_type', 'callback_url', 'callback_token', 'run_id'];
  return WORKSPACE_PARAMETERS.map((name) => ({ name, required: required.includes(name) }));
}

type Answer = { status: number; body?: unknown };

interface Fault<T> {
  remaining: number;
  match?: Match;
  data: T;
}

function takeFault<T>(list: Fault<T>[], req: { method: string; path: string }): Fault<T> | undefined {
  const fault = list.find((f) => f.remaining > 0 && (!f.match || f.match(req)));
  if (fault) fault.remaining -= 1;
  return fault;
}

/** `codersdk.NameValid`, in Coder's order. */
function nameProblem(name: string): string | null {
  const bytes = Buffer.byteLength(name);
  if (bytes > 32) return 'must be <= 32 characters';
  if (bytes < 1) return 'must be >= 1 character';
  if (name === 'new' || name === 'create') return `cannot use "${name}" as a name`;
  if (!/^[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*$/.test(name)) return 'must be alphanumeric with hyphens';
  return null;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
const TTL_MAX_MS = 30 * 24 * 3_600_000;

/** Splits `owner:me name:"acme app"` into pairs (quotes allowed around values). */
function parseQuery(q: string): { pairs: [string, string][]; error?: string } {
  const pairs: [string, string][] = [];
  const re = /\s*([^\s:]+):("([^"]*)"|(\S*))/y;
  let rest = q.trim();
  while (rest.length > 0) {
    re.lastIndex = 0;
    const m = re.exec(rest);
    if (!m) return { pairs, error: `Query element "${rest.split(/\s+/)[0]}" must be of the form key:value` };
    pairs.push([m[1] as string, (m[3] ?? m[4] ?? '') as string]);
    rest = rest.slice(m[0].length).trim();
  }
  return { pairs };
}

export async function createFakeCoder(options: FakeCoderOptions = {}): Promise<FakeCoder> {
  const now = options.now ?? Date.now;
  const stepMs = options.stepMs ?? 5;
  const token = options.token ?? `fake-${randomUUID()}`;
  const tokenDigest = createHash('sha256').update(token).digest();
  const users = new Map<string, FakeUser>();
  const templates = new Map<string, FakeTemplate>();
  const workspaces = new Map<string, FakeWorkspaceRecord>();
  const requests: RecordedRequest[] = [];

  const failFaults: Fault<{ status: number; body: unknown }>[] = [];
  const dropFaults: Fault<{ afterHandling: boolean }>[] = [];
  const delayFaults: Fault<{ ms: number }>[] = [];
  const pauseFaults: Fault<{ arrived: () => void; released: Promise<void> }>[] = [];
  const buildFaults: { remaining: number; transition: Transition; kind: 'fail' | 'stick'; error: string }[] = [];
  let held = false;

  const addUser = (username: string): FakeUser => {
    const existing = [...users.values()].find((u) => u.username === username);
    if (existing) return existing;
    const user = { id: randomUUID(), username };
    users.set(user.id, user);
    return user;
  };
  const addTemplate = (name: string, parameters: FakeTemplate['parameters'] = batonParameters()): FakeTemplate => {
    const versionId = randomUUID();
    const template = { id: randomUUID(), name, activeVersionId: versionId, versionIds: [versionId], parameters };
    templates.set(template.id, template);
    return template;
  };
  const me = addUser(options.username ?? 'baton');
  const defaultTemplate = addTemplate('baton-agent');

  const findByUsername = (username: string) => [...users.values()].find((u) => u.username.toLowerCase() === username.toLowerCase());
  /** The `{user}` path parameter (coderd/httpmw/userparam.go): `me`, a user id, or a username. */
  const findUser = (param: string, caller: FakeUser): FakeUser | undefined => {
    if (param === 'me') return caller;
    return users.get(param) ?? findByUsername(param);
  };
  /** codersdk.Response of userparam.go for an unknown user: the same for garbage, so nothing leaks. */
  const unknownUser = (param: string): Answer => ({
    status: 400,
    body: { message: '"user" must be an existing uuid or username.', detail: `queried user=${JSON.stringify(param)}` },
  });
  const findByName = (owner: FakeUser, name: string, includeDeleted = false) =>
    [...workspaces.values()]
      .filter((w) => w.owner.id === owner.id && w.name.toLowerCase() === name.toLowerCase() && (includeDeleted || !w.deleted))
      .sort((a, b) => b.createdAt - a.createdAt)[0];

  const snapshot = (ws: FakeWorkspaceRecord): WorkspaceSnapshot => ({
    id: ws.id,
    name: ws.name,
    owner: ws.owner.username,
    templateId: ws.template.id,
    status: workspaceStatus(ws),
    transition: latestBuild(ws).transition,
    deleted: ws.deleted,
    createdAt: ws.createdAt,
    ttlMs: ws.ttlMs,
    richParameters: Object.fromEntries(ws.richParameters.map((p) => [p.name, p.value])),
    buildId: latestBuild(ws).id,
    buildParameters: Object.fromEntries(latestBuild(ws).parameters.map((p) => [p.name, p.value])),
    transitions: ws.builds.map((b) => b.transition),
  });

  /**
   * The values a build keeps (wsbuilder `getParameters`): one per parameter the template declares,
   * taken from the request, else from the previous build, else the declared default (the fake's
   * templates all default to ""). A value for a parameter the template lacks is dropped without a
   * word: classic parameters iterate the template's only (`getClassicParameters`), dynamic ones
   * delete the rest on a start (dynamicparameters/resolver.go `ResolveParameters`). Releases
   * before terraform-provider-coder v2 refused it instead (codersdk `ValidateWorkspaceBuildParameters`).
   */
  const buildParameters = (template: FakeTemplate, sent: { name: string; value: string }[], previous?: FakeBuild) =>
    template.parameters.map(({ name }) => ({
      name,
      value: sent.find((p) => p.name === name)?.value ?? previous?.parameters.find((p) => p.name === name)?.value ?? '',
    }));

  const queueBuild = (
    ws: FakeWorkspaceRecord,
    transition: Transition,
    initiator: FakeUser,
    versionId?: string,
    sent: { name: string; value: string }[] = [],
  ): FakeBuild => {
    const previous = ws.builds[ws.builds.length - 1];
    const build = newBuild(ws, transition, versionId ?? previous?.templateVersionId ?? ws.template.activeVersionId, initiator, now());
    build.parameters = buildParameters(ws.template, sent, previous);
    const fault = buildFaults.find((f) => f.remaining > 0 && f.transition === transition);
    if (fault) {
      fault.remaining -= 1;
      if (fault.kind === 'fail') build.failWith = fault.error;
      else build.stuck = true;
    }
    ws.builds.push(build);
    ws.updatedAt = now();
    return build;
  };

  /** One step of every active job: pending → running → succeeded/failed; canceling → canceled. */
  const advance = () => {
    if (held) return;
    const t = now();
    for (const ws of workspaces.values()) {
      if (ws.deleted) continue;
      const build = latestBuild(ws);
      if (build.jobStatus === 'pending') {
        build.jobStatus = 'running';
        build.startedAt = t;
      } else if (build.jobStatus === 'running' && !build.stuck) {
        build.jobStatus = build.failWith ? 'failed' : 'succeeded';
        build.completedAt = t;
        if (build.transition === 'delete' && build.jobStatus === 'succeeded') ws.deleted = true;
      } else if (build.jobStatus === 'canceling') {
        build.jobStatus = 'canceled';
        build.completedAt = t;
      } else continue;
      build.updatedAt = t;
      ws.updatedAt = t;
    }
  };
  const ticker = setInterval(advance, stepMs);
  ticker.unref();

  const seedWorkspace = (seed: SeedWorkspace): WorkspaceSnapshot => {
    const owner = seed.owner ? addUser(seed.owner) : me;
    const template = templates.get(seed.templateId ?? defaultTemplate.id);
    if (!template) throw new Error(`fake coder: unknown template ${seed.templateId}`);
    const createdAt = seed.createdAt ?? now();
    const ws: FakeWorkspaceRecord = {
      id: randomUUID(),
      name: seed.name,
      owner,
      template,
      createdAt,
      updatedAt: createdAt,
      ttlMs: 3_600_000,
      automaticUpdates: 'never',
      autostartSchedule: null,
      deleted: false,
      richParameters: [],
      builds: [],
    };
    const settle = (build: FakeBuild, job: FakeBuild['jobStatus']) => {
      build.jobStatus = job;
      build.createdAt = build.updatedAt = createdAt;
      if (job !== 'pending') build.startedAt = createdAt;
      if (job === 'succeeded' || job === 'failed' || job === 'canceled') build.completedAt = createdAt;
      if (job === 'failed') build.failWith = 'seeded failure';
      build.stuck = Boolean(seed.stuck) && (job === 'pending' || job === 'running');
    };
    const start = newBuild(ws, 'start', template.activeVersionId, owner, createdAt);
    start.parameters = buildParameters(
      template,
      Object.entries(seed.parameters ?? {}).map(([name, value]) => ({ name, value })),
    );
    ws.builds.push(start);
    const status = seed.status ?? 'running';
    const startJob = { pending: 'pending', starting: 'running', failed: 'failed', canceled: 'canceled' } as const;
    if (status in startJob) {
      settle(start, startJob[status as keyof typeof startJob]);
    } else {
      settle(start, 'succeeded');
      if (status !== 'running') {
        const transition: Transition = status === 'deleting' ? 'delete' : 'stop';
        const next = newBuild(ws, transition, template.activeVersionId, owner, createdAt);
        next.parameters = start.parameters;
        ws.builds.push(next);
        settle(next, status === 'stopped' ? 'succeeded' : 'running');
      }
    }
    workspaces.set(ws.id, ws);
    return snapshot(ws);
  };

  // ---- HTTP ----------------------------------------------------------------------------------

  const authenticate = (req: IncomingMessage, url: URL): boolean => {
    const header = req.headers['coder-session-token'];
    const cookie = /(?:^|;\s*)coder_session_token=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    const presented = (Array.isArray(header) ? header[0] : header) ?? cookie ?? url.searchParams.get('coder_session_token');
    if (!presented) return false;
    return timingSafeEqual(createHash('sha256').update(presented).digest(), tokenDigest);
  };

  const validationFailed = (validations: { field: string; detail: string }[]): Answer => ({
    status: 400,
    body: { message: 'Validation failed.', validations },
  });
  const tagDetail = (tag: string, value: unknown) => `Validation failed for tag "${tag}" with value: "${value ?? ''}"`;

  function createWorkspace(caller: FakeUser, ownerParam: string, raw: unknown): Answer {
    const owner = findUser(ownerParam, caller);
    if (!owner) return unknownUser(ownerParam);
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      return { status: 400, body: { message: 'Request body must be valid JSON.', detail: 'expected a JSON object' } };
    }
    const body = raw as Record<string, unknown>;
    const name = typeof body.name === 'string' ? body.name : '';
    const templateId = typeof body.template_id === 'string' && body.template_id !== ZERO_UUID ? body.template_id : '';
    const versionId =
      typeof body.template_version_id === 'string' && body.template_version_id !== ZERO_UUID ? body.template_version_id : '';
    // httpapi.Read: the go-playground validator runs over the struct, fields in declaration order.
    const validations: { field: string; detail: string }[] = [];
    if (templateId && versionId) {
      validations.push({ field: 'template_id', detail: tagDetail('excluded_with', templateId) });
      validations.push({ field: 'template_version_id', detail: tagDetail('excluded_with', versionId) });
    } else if (!templateId && !versionId) {
      validations.push({ field: 'template_id', detail: tagDetail('required_without', ZERO_UUID) });
      validations.push({ field: 'template_version_id', detail: tagDetail('required_without', ZERO_UUID) });
    }
    if (!name) validations.push({ field: 'name', detail: tagDetail('required', '') });
    else if (nameProblem(name)) validations.push({ field: 'name', detail: tagDetail('workspace_name', name) });
    if (validations.length > 0) return validationFailed(validations);

    let template: FakeTemplate | undefined;
    if (templateId) {
      template = templates.get(templateId);
      if (!template) {
        return {
          status: 400,
          body: {
            message: `Template "${templateId}" doesn't exist.`,
            validations: [{ field: 'template_id', detail: 'template not found' }],
          },
        };
      }
    } else {
      template = [...templates.values()].find((t) => t.versionIds.includes(versionId));
      if (!template) {
        return {
          status: 400,
          body: {
            message: `Template version "${versionId}" doesn't exist.`,
            validations: [{ field: 'template_version_id', detail: 'template not found' }],
          },
        };
      }
    }
    if (body.ttl_ms !== undefined && body.ttl_ms !== null) {
      const ttl = Number(body.ttl_ms);
      const problem =
        !Number.isInteger(ttl) || ttl < 60_000
          ? 'time until shutdown must be at least one minute'
          : ttl >= TTL_MAX_MS
            ? 'time until shutdown must be less than 30 days'
            : null;
      if (problem) {
        return {
          status: 400,
          body: { message: 'Invalid Workspace Time to Shutdown.', validations: [{ field: 'ttl_ms', detail: problem }] },
        };
      }
    }
    if (findByName(owner, name)) {
      return {
        status: 409,
        body: {
          message: `Workspace ${JSON.stringify(name)} already exists.`,
          validations: [{ field: 'name', detail: 'This value is already in use and should be unique.' }],
        },
      };
    }
    const created = now();
    const ws: FakeWorkspaceRecord = {
      id: randomUUID(),
      name,
      owner,
      template,
      createdAt: created,
      updatedAt: created,
      ttlMs: typeof body.ttl_ms === 'number' ? body.ttl_ms : null,
      automaticUpdates: typeof body.automatic_updates === 'string' ? body.automatic_updates : 'never',
      autostartSchedule: typeof body.autostart_schedule === 'string' ? body.autostart_schedule : null,
      deleted: false,
      richParameters: Array.isArray(body.rich_parameter_values)
        ? (body.rich_parameter_values as { name: unknown; value: unknown }[]).map((p) => ({ name: String(p.name), value: String(p.value) }))
        : [],
      builds: [],
    };
    queueBuild(ws, 'start', caller, versionId || template.activeVersionId, ws.richParameters);
    workspaces.set(ws.id, ws);
    return { status: 201, body: renderWorkspace(ws) };
  }

  function createBuild(caller: FakeUser, ws: FakeWorkspaceRecord, raw: unknown): Answer {
    const body = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
    const transition = body.transition;
    if (transition !== 'start' && transition !== 'stop' && transition !== 'delete') {
      return validationFailed([{ field: 'transition', detail: tagDetail(transition ? 'oneof' : 'required', transition) }]);
    }
    if (body.orphan === true && transition !== 'delete') {
      return { status: 400, body: { message: 'Orphan is only permitted when deleting a workspace.' } };
    }
    if (ACTIVE_JOB_STATUSES.includes(latestBuild(ws).jobStatus)) {
      return { status: 409, body: { message: 'A workspace build is already active.' } };
    }
    const build = queueBuild(ws, transition, caller, typeof body.template_version_id === 'string' ? body.template_version_id : undefined);
    return { status: 201, body: renderBuild(ws, build) };
  }

  function listWorkspaces(caller: FakeUser, url: URL): Answer {
    const { pairs, error } = parseQuery(url.searchParams.get('q') ?? '');
    const invalid = (detail: string): Answer => ({
      status: 400,
      body: { message: 'Invalid workspace search query.', validations: [{ field: 'q', detail }] },
    });
    if (error) return invalid(error);
    let rows = [...workspaces.values()].filter((w) => !w.deleted);
    for (const [key, value] of pairs) {
      switch (key) {
        case 'owner': {
          // queries/workspaces.sql compares `owner:` with usernames only (`me` is replaced by the
          // caller's username first): a user id matches nobody and the list is empty.
          const owner = value === 'me' ? caller : findByUsername(value);
          rows = owner ? rows.filter((w) => w.owner.id === owner.id) : [];
          break;
        }
        case 'name':
          // Coder: `workspaces.name ILIKE '%' || @name || '%'` — a case-insensitive substring.
          rows = rows.filter((w) => w.name.toLowerCase().includes(value.toLowerCase()));
          break;
        case 'template':
          rows = rows.filter((w) => w.template.name.toLowerCase() === value.toLowerCase());
          break;
        case 'status':
          rows = rows.filter((w) => workspaceStatus(w) === value);
          break;
        default:
          return invalid(`Query param "${key}" is not a valid query param`);
      }
    }
    // Coder orders running workspaces first, then by owner name, then by name.
    rows.sort(
      (a, b) =>
        Number(workspaceStatus(b) === 'running') - Number(workspaceStatus(a) === 'running') ||
        a.owner.username.toLowerCase().localeCompare(b.owner.username.toLowerCase()) ||
        a.name.toLowerCase().localeCompare(b.name.toLowerCase()),
    );
    const limit = Number(url.searchParams.get('limit') ?? 0);
    const offset = Number(url.searchParams.get('offset') ?? 0);
    if (!Number.isInteger(limit) || limit < 0 || !Number.isInteger(offset) || offset < 0) {
      return {
        status: 400,
        body: {
          message: 'Query parameters have invalid values.',
          validations: [{ field: 'limit', detail: 'must be a non-negative integer' }],
        },
      };
    }
    const page = rows.slice(offset, limit > 0 ? offset + limit : undefined);
    return { status: 200, body: { workspaces: page.map(renderWorkspace), count: rows.length } };
  }

  function route(caller: FakeUser, method: string, url: URL, body: unknown): Answer {
    const path = url.pathname;
    const includeDeleted = url.searchParams.get('include_deleted') === 'true';
    let m: RegExpExecArray | null;
    if (method === 'POST' && (m = /^\/api\/v2\/users\/([^/]+)\/workspaces$/.exec(path))) {
      return createWorkspace(caller, decodeURIComponent(m[1] as string), body);
    }
    if (method === 'GET' && (m = /^\/api\/v2\/users\/([^/]+)$/.exec(path))) {
      const param = decodeURIComponent(m[1] as string);
      const user = findUser(param, caller);
      return user ? { status: 200, body: renderUser(user) } : unknownUser(param);
    }
    if (method === 'GET' && (m = /^\/api\/v2\/users\/([^/]+)\/workspace\/([^/]+)$/.exec(path))) {
      const param = decodeURIComponent(m[1] as string);
      const owner = findUser(param, caller);
      if (!owner) return unknownUser(param);
      const ws = findByName(owner, decodeURIComponent(m[2] as string), includeDeleted);
      return ws ? { status: 200, body: renderWorkspace(ws) } : { status: 404, body: NOT_FOUND };
    }
    if (method === 'GET' && path === '/api/v2/workspaces') return listWorkspaces(caller, url);
    if ((m = /^\/api\/v2\/workspaces\/([^/]+)(\/builds)?$/.exec(path))) {
      const id = decodeURIComponent(m[1] as string);
      const ws = UUID_RE.test(id) ? workspaces.get(id) : undefined;
      if (!ws) return { status: 404, body: NOT_FOUND };
      if (ws.deleted && !(method === 'GET' && !m[2] && includeDeleted)) {
        return {
          status: 410,
          body: {
            message: `Workspace "${ws.id}" was deleted, you can view this workspace by specifying '?deleted=true' and trying again.`,
          },
        };
      }
      if (method === 'GET' && !m[2]) return { status: 200, body: renderWorkspace(ws) };
      if (method === 'POST' && m[2]) return createBuild(caller, ws, body);
    }
    if (method === 'PATCH' && (m = /^\/api\/v2\/workspacebuilds\/([^/]+)\/cancel$/.exec(path))) {
      const id = decodeURIComponent(m[1] as string);
      const ws = [...workspaces.values()].find((w) => w.builds.some((b) => b.id === id));
      const build = ws?.builds.find((b) => b.id === id);
      if (!ws || !build) return { status: 404, body: NOT_FOUND };
      // coderd/workspacebuilds.go `patchCancelWorkspaceBuild`, checked in this order.
      if (build.completedAt !== null) return { status: 400, body: { message: 'Job has already completed!' } };
      if (build.canceledAt !== null) return { status: 400, body: { message: 'Job has already been marked as canceled!' } };
      const t = now();
      build.canceledAt = build.updatedAt = t;
      if (build.startedAt === null) {
        // No provisioner picked it up yet: Coder marks it completed at once (`canceled`).
        build.completedAt = t;
        build.jobStatus = 'canceled';
      } else {
        // A running job only learns of it from its provisioner: `canceling` until then.
        build.jobStatus = 'canceling';
      }
      return { status: 200, body: { message: 'Job has been marked as canceled...' } };
    }
    // coderd/workspacebuilds.go `workspaceBuildParameters` (docs/reference/api/builds.md "Get build
    // parameters for workspace build"): 200 with a bare array of {name, value}; the build of a
    // deleted workspace still answers. A path id that is not a UUID: 400 from httpmw's parseUUID,
    // whose message quotes the URL parameter's name, not its value.
    if (method === 'GET' && (m = /^\/api\/v2\/workspacebuilds\/([^/]+)\/parameters$/.exec(path))) {
      const id = decodeURIComponent(m[1] as string);
      if (!UUID_RE.test(id)) {
        return { status: 400, body: { message: 'Invalid UUID "workspacebuild".', detail: `invalid UUID length: ${id.length}` } };
      }
      const build = [...workspaces.values()].flatMap((w) => w.builds).find((b) => b.id === id);
      if (!build) return { status: 404, body: NOT_FOUND };
      return { status: 200, body: build.parameters.map((p) => ({ name: p.name, value: p.value })) };
    }
    // Templates (coder/coder docs/reference/api/templates.md, coderd/templateversions.go).
    if (method === 'GET' && (m = /^\/api\/v2\/templates\/([^/]+)$/.exec(path))) {
      const template = templates.get(decodeURIComponent(m[1] as string));
      if (!template) return { status: 404, body: NOT_FOUND };
      return {
        status: 200,
        body: {
          id: template.id,
          name: template.name,
          display_name: template.name,
          active_version_id: template.activeVersionId,
          deprecated: false,
        },
      };
    }
    if (method === 'GET' && (m = /^\/api\/v2\/templateversions\/([^/]+)\/rich-parameters$/.exec(path))) {
      const id = decodeURIComponent(m[1] as string);
      const template = [...templates.values()].find((t) => t.versionIds.includes(id));
      if (!template) return { status: 404, body: NOT_FOUND };
      return {
        status: 200,
        body: template.parameters.map((p) => ({
          name: p.name,
          display_name: p.name,
          description: '',
          type: 'string',
          mutable: false,
          default_value: '',
          required: p.required,
          options: [],
          ephemeral: false,
        })),
      };
    }
    return { status: 404, body: { message: 'Route not found.' } };
  }

  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    const text = await readBody(req);
    const key = { method, path: url.pathname };
    const authenticated = authenticate(req, url);
    let parsed: unknown;
    let badJson = false;
    if (text.length > 0) {
      try {
        parsed = JSON.parse(text);
      } catch {
        badJson = true;
      }
    }
    const record: RecordedRequest = { method, path: url.pathname, query: url.search, status: 0, body: parsed, authenticated };
    requests.push(record);

    const delay = takeFault(delayFaults, key);
    const latency = faults.latencyMs + (delay?.data.ms ?? 0);
    // A request Coder has received is handled even if its client has gone (killed, timed out):
    // that is how a create can succeed while its caller never hears about it.
    if (latency > 0) await sleep(latency);
    const pause = takeFault(pauseFaults, key);
    if (pause) {
      pause.data.arrived();
      await pause.data.released;
    }

    const drop = takeFault(dropFaults, key);
    if (drop && !drop.data.afterHandling) {
      record.status = 'dropped';
      req.socket.destroy();
      return;
    }
    let answer: Answer;
    if (!authenticated) {
      // Security first: nothing is parsed or done for a request without the right token.
      answer = {
        status: 401,
        body: {
          message: 'You are signed out or your session has expired. Please sign in again to continue.',
          detail: 'API key is invalid.',
        },
      };
    } else {
      const fail = takeFault(failFaults, key);
      if (fail) answer = { status: fail.data.status, body: fail.data.body };
      else if (badJson) answer = { status: 400, body: { message: 'Request body must be valid JSON.', detail: 'invalid character' } };
      else answer = route(me, method, url, parsed);
    }
    if (drop) {
      record.status = 'dropped';
      req.socket.destroy();
      return;
    }
    record.status = answer.status;
    if (res.destroyed || req.socket.destroyed) return;
    const payload = JSON.stringify(answer.body ?? {});
    res.writeHead(answer.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) });
    res.end(payload);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ message: 'Internal error.', detail: String(error) }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const faults: FakeCoder['faults'] = {
    latencyMs: 0,
    failNext(count, { status = 503, body, match } = {}) {
      failFaults.push({ remaining: count, match, data: { status, body: body ?? { message: 'Service Unavailable (injected).' } } });
    },
    dropNext(count, { afterHandling = false, match } = {}) {
      dropFaults.push({ remaining: count, match, data: { afterHandling } });
    },
    delayNext(count, ms, { match } = {}) {
      delayFaults.push({ remaining: count, match, data: { ms } });
    },
    pauseNext({ match } = {}) {
      let arrived = () => {};
      let release = () => {};
      const reached = new Promise<void>((resolve) => (arrived = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      pauseFaults.push({ remaining: 1, match, data: { arrived, released } });
      return { reached, release };
    },
    failNextBuilds(count, transition, error = 'terraform apply failed (injected)') {
      buildFaults.push({ remaining: count, transition, kind: 'fail', error });
    },
    stickNextBuilds(count, transition) {
      buildFaults.push({ remaining: count, transition, kind: 'stick', error: '' });
    },
    holdBuilds(value) {
      held = value;
    },
    releaseStuckBuilds() {
      for (const ws of workspaces.values()) for (const build of ws.builds) build.stuck = false;
    },
  };

  return {
    url: `http://127.0.0.1:${port}`,
    token,
    user: me,
    template: defaultTemplate,
    requests,
    addUser,
    addTemplate,
    seedWorkspace,
    workspaces: ({ live = false } = {}) => [...workspaces.values()].filter((w) => !live || !w.deleted).map(snapshot),
    workspace(name, owner) {
      const user = owner ? [...users.values()].find((u) => u.username === owner) : me;
      const ws = user ? findByName(user, name, true) : undefined;
      return ws ? snapshot(ws) : undefined;
    },
    async settle(timeoutMs = 5_000) {
      const busy = () =>
        [...workspaces.values()].some((w) => !w.deleted && ACTIVE_JOB_STATUSES.includes(latestBuild(w).jobStatus) && !latestBuild(w).stuck);
      await until(() => !busy(), 'the fake Coder’s builds to settle', timeoutMs, stepMs);
    },
    faults,
    async close() {
      clearInterval(ticker);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
