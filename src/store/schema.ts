/**
 * Table row types, exactly as stored (snake_case). Domain objects (camelCase) are mapped at the
 * module boundary of whoever owns the table (runs/ owns runs and run_events).
 *
 * Conventions that keep SQLite and PostgreSQL identical:
 * - timestamps are epoch milliseconds (`bigint` on PostgreSQL, parsed back to number);
 * - booleans are integers 0/1;
 * - structured values are JSON text.
 */
import type { Generated } from 'kysely';

export interface RunsTable {
  id: Generated<number>;
  key: string;
  stage: string;
  owner: string;
  repo: string;
  number: number | null;
  status: string;
  payload: string;
  attempts: number;
  max_attempts: number;
  run_at: number;
  lease_token: string | null;
  lease_expires_at: number | null;
  workspace_name: string | null;
  workspace_id: string | null;
  callback_token_hash: string | null;
  followup: number;
  followup_payload: string | null;
  last_error: string | null;
  exit_code: number | null;
  summary: string | null;
  usage: string | null;
  cost_usd: number | null;
  /** `reported` by the agent's CLI or `computed` from its tokens and the price table; null: no cost. */
  cost_source: string | null;
  duration_ms: number | null;
  created_at: number;
  updated_at: number;
  claimed_at: number | null;
  started_at: number | null;
  finished_at: number | null;
  /** The run's token cap when claimed; null: none, or not claimed yet. */
  token_cap: number | null;
  /** The run's duration limit when claimed; null: not claimed yet (STALE_WORKSPACE_MINUTES applies). */
  max_duration_ms: number | null;
  /** Why a held run waits (the budget that is spent); null unless held. */
  held_reason: string | null;
  /** Which attempt of its agent the run is on (1 = the first; transient failures add one). */
  agent_attempt: Generated<number>;
}

export interface RunEventsTable {
  id: Generated<number>;
  run_id: number;
  type: string;
  from_status: string | null;
  to_status: string | null;
  data: string | null;
  created_at: number;
}

/** A single row (id = 1) shared by every replica: the pause switch and the claim lock. */
export interface DispatchStateTable {
  id: number;
  paused: number;
  updated_at: number;
}

/** One row per cron slot that has fired: the primary key makes a slot fire once across replicas. */
export interface ScheduleFiresTable {
  name: string;
  slot: number;
  run_id: number | null;
  created_at: number;
}

export interface TeardownsTable {
  id: Generated<number>;
  run_id: number | null;
  workspace_name: string;
  status: string;
  attempts: number;
  next_attempt_at: number;
  lease_token: string | null;
  lease_expires_at: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

/** Operator API tokens: only the SHA-256 of each token; a revoked token keeps its row. */
export interface ApiTokensTable {
  id: Generated<number>;
  name: string;
  token_hash: string;
  /** The first characters of the token (prefix included), to tell tokens apart in listings. */
  hint: string;
  /** `read`, `operate` or `admin` (migration 0041). */
  scope: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** Labels last seen on an issue/PR, per ingress route (`scope`); `labels` is a JSON array. */
export interface WebhookLabelsTable {
  scope: string;
  owner: string;
  repo: string;
  number: number;
  labels: string;
  updated_at: number;
}

/** The durable webhook inbox (migration 0045-inbox, owned by ingress/): one row per stored delivery. */
export interface InboxDeliveriesTable {
  id: Generated<number>;
  /** `webhook` (a forge delivery) or `sync` (catch-up from the forge API). */
  source: string;
  /** The path it was delivered to (`/webhook/gitea`, a legacy path), or the source's own name. */
  endpoint: string;
  /** X-Gitea-Delivery; null when the sender gave none (then only the body hash dedups it). */
  delivery_id: string | null;
  event: string | null;
  event_type: string | null;
  /** JSON object of the delivery headers baton reads (never the signature). */
  headers: string;
  /** The signed JSON payload, as received. */
  body: string;
  body_sha256: string;
  /** `owner/repo`, lower-cased; null for a repository-less event. */
  repository: string | null;
  number: number | null;
  /** Ordering key: `owner/repo#n`, `owner/repo`, or '' (lower-cased). */
  subject: string;
  received_at: number;
  status: string;
  attempts: number;
  next_attempt_at: number;
  lease_token: string | null;
  lease_expires_at: number | null;
  last_error: string | null;
  outcome: string | null;
  verdict: string | null;
  /** JSON array of run ids it started or joined. */
  run_ids: string | null;
  /** JSON array of the stages it acted on (dedup of later copies of the same body). */
  stages: string | null;
  /** JSON array: the label memory before this delivery (copies of its body diff against it). */
  labels_before: string | null;
  processed_at: number | null;
  /** The delivery this one replays (source `replay`; migration 0050-delivery-replays); null otherwise. */
  replay_of: number | null;
  /** The name of the operator token that replayed it. */
  replayed_by: string | null;
}

/** Usage the agents reported, per day (in the budgets' time zone) and budget scope (owned by budgets/). */
export interface BudgetUsageTable {
  /** `YYYY-MM-DD`. */
  day: string;
  /** `global`, `repository:OWNER/REPO` or `stage:NAME`. */
  scope: string;
  tokens: number;
  cost_usd: number;
  /** Completions counted (attempts included). */
  runs: number;
  updated_at: number;
}

/** Limits set through the API for one day and scope; null keeps the configured limit. */
export interface BudgetLimitsTable {
  day: string;
  scope: string;
  tokens: number | null;
  cost_usd: number | null;
  updated_at: number;
}

export interface MigrationsTable {
  name: string;
  applied_at: number;
}

/** Catch-up's place per repository (migration 0052-forge-sync). */
export interface ForgeSyncCursorsTable {
  repository: string;
  owner: string;
  repo: string;
  /** `config` or `delivery`: why catch-up reads this repository. */
  origin: string;
  /** The forge's time (RFC 3339): the newest updated_at seen there. */
  since: string;
  created_at: number;
  last_pass_at: number | null;
  last_error: string | null;
}

/** The pull request heads baton has acted on (migration 0052-forge-sync). */
export interface PullRequestHeadsTable {
  repository: string;
  number: number;
  head_sha: string;
  updated_at: number;
}

/** Forge facts acted on: an issue opened, a comment, a review (migration 0090-forge-facts; owned by ingress/). */
export interface ForgeFactsTable {
  repository: string;
  fact: string;
  delivery_id: number | null;
  created_at: number;
}

/** Repositories seen in a signed forge delivery (migration 0095-known-repositories; owned by ingress/). */
export interface KnownRepositoriesTable {
  /** `owner/repo`, lower-cased. */
  repository: string;
  first_seen_at: number;
}

export interface Database {
  runs: RunsTable;
  run_events: RunEventsTable;
  dispatch_state: DispatchStateTable;
  schedule_fires: ScheduleFiresTable;
  teardowns: TeardownsTable;
  api_tokens: ApiTokensTable;
  baton_migrations: MigrationsTable;
  webhook_labels: WebhookLabelsTable;
  inbox_deliveries: InboxDeliveriesTable;
  known_repositories: KnownRepositoriesTable;
  budget_usage: BudgetUsageTable;
  budget_limits: BudgetLimitsTable;
  forge_sync_cursors: ForgeSyncCursorsTable;
  pull_request_heads: PullRequestHeadsTable;
  forge_facts: ForgeFactsTable;
}
