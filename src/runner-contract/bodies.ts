/**
 * The completion statuses a runner reports. `timed_out` is only for the duration limit; every
 * other way a run can end badly (token cap, crash, clone failure, SIGTERM) is `failed` with a
 * summary saying why.
 */
export const AGENT_STATUS = {
  succeeded: 'succeeded',
  failed: 'failed',
  timedOut: 'timed_out',
} as const;

export type AgentStatus = (typeof AGENT_STATUS)[keyof typeof AGENT_STATUS];

/**
 * Machine-readable reason in the completion body's `error` field; `summary` carries the words
 * for people.
 */
export const FAILURE_KIND = {
  cloneFailed: 'clone_failed',
  /** The clone failed for a reason that passes (the forge 5xx or unreachable, a full disk, a timeout): worth trying again. */
  cloneUnavailable: 'clone_unavailable',
  /** A setup command failed for such a reason (a full disk, no descriptors or processes left, the network). */
  setupUnavailable: 'setup_unavailable',
  commandFileInvalid: 'command_file_invalid',
  setupFailed: 'setup_failed',
  agentNotStarted: 'agent_not_started',
  agentError: 'agent_error',
  /** The agent's API answered 529 (overloaded) or another 5xx: worth trying again later. */
  agentOverloaded: 'agent_overloaded',
  /** The agent's API answered 429 (rate limit): worth trying again later. */
  agentRateLimited: 'agent_rate_limited',
  /** The agent could not reach its API (connection refused, reset, DNS): worth trying again later. */
  agentUnreachable: 'agent_unreachable',
  /** The CLI "succeeded" without a single turn, e.g. the prompt ran as an unknown slash command. */
  noTurns: 'no_turns',
  noResult: 'no_result',
  /** The agent's CLI was refused by its API: no or a wrong key, an expired login. Not retried. */
  agentAuth: 'agent_auth_failed',
  /** The CLI stopped at its own turn limit (Claude Code `error_max_turns`, Gemini CLI exit 53). */
  agentTurnLimit: 'agent_turn_limit',
  /**
   * The CLI or its API refused the input itself: a bad option or value, a prompt too long for
   * the model, an invalid request (HTTP 400, Gemini CLI exit 42). Not retried: it would fail again.
   */
  agentBadInput: 'agent_bad_input',
  tokenCap: 'token_cap',
  maxDuration: 'max_duration',
  runnerTerminated: 'runner_terminated',
  runnerError: 'runner_error',
} as const;

/** Token totals in the camelCase shape of Claude Code's `modelUsage` entries. */
export interface AgentUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}

/** Body of `POST CALLBACK_URL`: the contract with the server. */
export interface CompletionBody {
  status: AgentStatus;
  /** Exit code of the agent process; null when it never ran or was ended by a signal. */
  exitCode: number | null;
  /** The agent's final text on success; on failure a reason a person can act on. */
  summary: string;
  usage: AgentUsage | null;
  costUsd: number | null;
  /**
   * Where `costUsd` came from: `reported` by the agent's CLI, or `computed` by the runner from the
   * tokens and the run's price (`BATON_AGENT_PRICE`) for a CLI that reports none. Absent: no cost.
   */
  costSource?: 'reported' | 'computed';
  durationMs: number;
  error?: string;
  /**
   * The agent asked instead of finishing (`baton ask`): the run waits for a reply (status is then
   * `succeeded`, the turn's usage and cost as usual). The session's transcript was uploaded first.
   */
  question?: AskedQuestion;
}

/**
 * The form of an agent CLI's session id that baton keeps and resumes: Claude Code, Codex CLI and
 * Gemini CLI use UUIDs, OpenCode `ses_<26 letters and digits>`. It comes from the agent's own
 * stream, so it is checked everywhere it crosses a boundary, and never starts like an option.
 */
export const SESSION_ID_FORM = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** A question of the agent, as the completion carries it. */
export interface AskedQuestion {
  text: string;
  /** The agent CLI's session id, what the next turn resumes. */
  sessionId: string;
  /** Whom it is for (a login or a role), when the agent said. */
  for?: string;
}

/**
 * The prompt a run's agent was given, reported once the runner has resolved it (the run page
 * shows it). Masked by the runner like every log line: no secret of the run's goes in it.
 */
export interface PromptReport {
  /** The prompt as the agent got it, `$ARGUMENTS` replaced; the server keeps the first `MAX_PROMPT_CHARS`. */
  text: string;
  /** What `$ARGUMENTS` stood for. */
  arguments: string;
  /** `repository`: the repository's `.claude/commands/<stage>.md`; `built-in`: baton's template for the stage. */
  source: 'repository' | 'built-in';
  /** Where it was read: `.claude/commands/develop.md`, or the built-in template's name. */
  file: string;
  /** The model the agent was asked to use; null: the CLI's default. */
  model: string | null;
}

/** Characters of a prompt the server stores; a longer prompt is cut, and says so. */
export const MAX_PROMPT_CHARS = 64 * 1024;

/** Body of `POST PROGRESS_URL`. */
export interface ProgressBody {
  lines: string[];
  usage?: AgentUsage;
  costUsd?: number;
  /** Sent once, in the first batch after the prompt is resolved. */
  prompt?: PromptReport;
}
