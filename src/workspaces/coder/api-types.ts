/** The parts of Coder's REST API v2 bodies that baton reads or sends (see reference/coder/API.md). */

/** `codersdk.Response`, the body of every non-2xx answer. */
export interface CoderResponse {
  message: string;
  detail?: string;
  validations?: { field: string; detail: string }[];
}

export type CoderBuildStatus =
  'pending' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed' | 'canceling' | 'canceled' | 'deleting' | 'deleted';

export type CoderTransition = 'start' | 'stop' | 'delete';

export type CoderJobStatus = 'pending' | 'running' | 'succeeded' | 'canceling' | 'canceled' | 'failed' | 'unknown';

export interface CoderWorkspaceBuild {
  id: string;
  build_number: number;
  workspace_id: string;
  workspace_name: string;
  transition: CoderTransition;
  status: CoderBuildStatus | (string & {});
  template_version_id: string;
  created_at: string;
  job: { id: string; status: CoderJobStatus | (string & {}); error?: string; error_code?: string };
}

export interface CoderWorkspace {
  id: string;
  name: string;
  owner_id: string;
  owner_name: string;
  template_id: string;
  template_name?: string;
  created_at: string;
  ttl_ms?: number | null;
  latest_build: CoderWorkspaceBuild;
}

/** The part of `codersdk.User` baton reads (`GET /users/{user}`). */
export interface CoderUser {
  id: string;
  username: string;
}

export interface CoderWorkspaceList {
  workspaces: CoderWorkspace[];
  count: number;
}

export interface CoderRichParameter {
  name: string;
  value: string;
}

/**
 * `codersdk.WorkspaceBuildParameter`, as `GET /workspacebuilds/{id}/parameters` answers them: the
 * values a build was made with, for the parameters its template version declares only (Coder
 * drops any other it was sent), a declared one that was not sent holding its default.
 */
export type CoderBuildParameter = CoderRichParameter;

export interface CoderCreateWorkspaceRequest {
  name: string;
  template_id?: string;
  template_version_id?: string;
  template_version_preset_id?: string;
  rich_parameter_values: CoderRichParameter[];
  ttl_ms?: number;
  automatic_updates?: 'always' | 'never';
}

export interface CoderCreateBuildRequest {
  transition: CoderTransition;
  orphan?: boolean;
  reason?: string;
}

/**
 * The part of `codersdk.Template` baton reads (`GET /templates/{template}`; coder/coder
 * docs/reference/api/templates.md "Get template metadata by ID").
 */
export interface CoderTemplate {
  id: string;
  name: string;
  active_version_id: string;
}

/**
 * The part of `codersdk.TemplateVersionParameter` baton reads
 * (`GET /templateversions/{templateversion}/rich-parameters`, coderd/templateversions.go).
 */
export interface CoderTemplateParameter {
  name: string;
  /** True when it has no default: a create without it is refused. */
  required: boolean;
}
