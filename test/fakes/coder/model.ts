import { randomUUID } from 'node:crypto';

/**
 * The state of the fake Coder: users, templates, workspaces and their builds, and the status
 * derivation of `convertWorkspaceStatus` (reference/coder/API.md). Rendering follows
 * workspace-example.json field for field.
 */

export type Transition = 'start' | 'stop' | 'delete';
export type JobStatus = 'pending' | 'running' | 'succeeded' | 'canceling' | 'canceled' | 'failed';

const STATUS_TABLE: Record<JobStatus, Record<Transition, string>> = {
  pending: { start: 'pending', stop: 'pending', delete: 'pending' },
  running: { start: 'starting', stop: 'stopping', delete: 'deleting' },
  succeeded: { start: 'running', stop: 'stopped', delete: 'deleted' },
  canceling: { start: 'canceling', stop: 'canceling', delete: 'canceling' },
  canceled: { start: 'canceled', stop: 'canceled', delete: 'canceled' },
  failed: { start: 'failed', stop: 'failed', delete: 'failed' },
};

export function convertWorkspaceStatus(job: JobStatus, transition: Transition): string {
  return STATUS_TABLE[job][transition];
}

export const ACTIVE_JOB_STATUSES: readonly JobStatus[] = ['pending', 'running', 'canceling'];

export interface FakeUser {
  id: string;
  username: string;
}

export interface FakeTemplate {
  id: string;
  name: string;
  activeVersionId: string;
  versionIds: string[];
  /** The rich parameters its versions declare (`required`: no default). */
  parameters: { name: string; required: boolean }[];
}

export interface FakeBuild {
  id: string;
  jobId: string;
  buildNumber: number;
  transition: Transition;
  jobStatus: JobStatus;
  templateVersionId: string;
  initiator: FakeUser;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  completedAt: number | null;
  canceledAt: number | null;
  /** The job ends failed with this error instead of succeeding. */
  failWith: string | null;
  /** The job stays `running` until cancelled (a build stuck in `stopping`). */
  stuck: boolean;
  /**
   * What `GET /workspacebuilds/{id}/parameters` answers: one value per parameter the template
   * declares (the one sent, else the previous build's, else its default), none it does not.
   */
  parameters: { name: string; value: string }[];
}

export interface FakeWorkspaceRecord {
  id: string;
  name: string;
  owner: FakeUser;
  template: FakeTemplate;
  createdAt: number;
  updatedAt: number;
  ttlMs: number | null;
  automaticUpdates: string;
  autostartSchedule: string | null;
  deleted: boolean;
  richParameters: { name: string; value: string }[];
  builds: FakeBuild[];
}

export const ORGANIZATION_ID = '7c60d51f-b44e-4682-87d6-449835ea4de6';

export function latestBuild(ws: FakeWorkspaceRecord): FakeBuild {
  const build = ws.builds[ws.builds.length - 1];
  if (!build) throw new Error(`fake coder: workspace ${ws.name} has no build`);
  return build;
}

export function workspaceStatus(ws: FakeWorkspaceRecord): string {
  const build = latestBuild(ws);
  return convertWorkspaceStatus(build.jobStatus, build.transition);
}

export function newBuild(
  ws: Pick<FakeWorkspaceRecord, 'builds'>,
  transition: Transition,
  templateVersionId: string,
  initiator: FakeUser,
  now: number,
): FakeBuild {
  return {
    id: randomUUID(),
    jobId: randomUUID(),
    buildNumber: ws.builds.length + 1,
    transition,
    jobStatus: 'pending',
    templateVersionId,
    initiator,
    createdAt: now,
    updatedAt: now,
    startedAt: null,
    completedAt: null,
    canceledAt: null,
    failWith: null,
    stuck: false,
    parameters: [],
  };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function renderBuild(ws: FakeWorkspaceRecord, build: FakeBuild) {
  return {
    build_number: build.buildNumber,
    created_at: iso(build.createdAt),
    daily_cost: 0,
    deadline: build.transition === 'start' && ws.ttlMs ? iso(build.createdAt + ws.ttlMs) : null,
    id: build.id,
    initiator_id: build.initiator.id,
    initiator_name: build.initiator.username,
    job: {
      available_workers: [],
      canceled_at: iso(build.canceledAt),
      completed_at: iso(build.completedAt),
      created_at: iso(build.createdAt),
      error: build.jobStatus === 'failed' ? (build.failWith ?? 'failed') : undefined,
      error_code: '',
      file_id: '8a0cfb4f-ddc9-436d-91bb-75133c583767',
      id: build.jobId,
      input: { template_version_id: build.templateVersionId, workspace_build_id: build.id },
      metadata: {
        template_display_name: ws.template.name,
        template_icon: '',
        template_id: ws.template.id,
        template_name: ws.template.name,
        template_version_name: build.templateVersionId.slice(0, 8),
        workspace_id: ws.id,
        workspace_name: ws.name,
      },
      organization_id: ORGANIZATION_ID,
      queue_position: 0,
      queue_size: 0,
      started_at: iso(build.startedAt),
      status: build.jobStatus,
      tags: { scope: 'organization' },
      type: 'workspace_build',
      worker_id: build.startedAt ? 'ae5fa6f7-c55b-40c1-b40a-b36ac467652b' : undefined,
    },
    matched_provisioners: { available: 1, count: 1, most_recently_seen: iso(build.createdAt) },
    max_deadline: null,
    reason: 'initiator',
    resources: [],
    status: convertWorkspaceStatus(build.jobStatus, build.transition),
    template_version_id: build.templateVersionId,
    template_version_name: build.templateVersionId.slice(0, 8),
    transition: build.transition,
    updated_at: iso(build.updatedAt),
    workspace_id: ws.id,
    workspace_name: ws.name,
    workspace_owner_avatar_url: '',
    workspace_owner_id: ws.owner.id,
    workspace_owner_name: ws.owner.username,
  };
}

/** `codersdk.User` as `GET /users/{user}` answers it (docs/reference/api/users.md). */
export function renderUser(user: FakeUser) {
  return {
    avatar_url: '',
    created_at: '2024-01-01T00:00:00Z',
    email: `${user.username}@example.com`,
    id: user.id,
    last_seen_at: '2024-01-01T00:00:00Z',
    login_type: 'password',
    name: '',
    organization_ids: [ORGANIZATION_ID],
    roles: [],
    status: 'active',
    theme_preference: '',
    updated_at: '2024-01-01T00:00:00Z',
    username: user.username,
  };
}

export function renderWorkspace(ws: FakeWorkspaceRecord) {
  const build = latestBuild(ws);
  return {
    allow_renames: false,
    automatic_updates: ws.automaticUpdates,
    autostart_schedule: ws.autostartSchedule,
    created_at: iso(ws.createdAt),
    deleting_at: null,
    dormant_at: null,
    favorite: false,
    health: { failing_agents: [], healthy: true },
    id: ws.id,
    last_used_at: iso(ws.updatedAt),
    latest_app_status: null,
    latest_build: renderBuild(ws, build),
    name: ws.name,
    next_start_at: null,
    organization_id: ORGANIZATION_ID,
    organization_name: 'coder',
    outdated: build.templateVersionId !== ws.template.activeVersionId,
    owner_avatar_url: '',
    owner_id: ws.owner.id,
    owner_name: ws.owner.username,
    template_active_version_id: ws.template.activeVersionId,
    template_allow_user_cancel_workspace_jobs: true,
    template_display_name: ws.template.name,
    template_icon: '',
    template_id: ws.template.id,
    template_name: ws.template.name,
    template_require_active_version: false,
    ttl_ms: ws.ttlMs,
    updated_at: iso(ws.updatedAt),
  };
}
