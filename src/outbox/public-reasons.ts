import { OUTCOME_MISSING, RUN_EVENT, RUN_STATUS, type Run, type RunEvent } from '../runs/index.js';

/**
 * What a status comment says about why a run did not succeed. Comments land on issues that may be
 * public, so they say it in general terms a person understands; the details (a provider's error
 * text, paths, the operator's token name) live in the run's record, in the API and dashboard.
 *
 * Keyed by the machine-readable reasons a runner reports in its completion's `error` (the agent
 * runner contract's FAILURE_KIND); a test checks that every one of them has its sentence here.
 */
export const RUNNER_FAILURE_SENTENCES: Readonly<Record<string, string>> = {
  clone_failed: 'The repository could not be cloned.',
  clone_unavailable: 'The repository could not be cloned for now (the forge or the disk); the run is tried again.',
  setup_unavailable: 'A setup step could not run for now (the disk, the system or the network); the run is tried again.',
  command_file_invalid: "The stage's prompt file in the repository (.claude/commands/) could not be used.",
  setup_failed: 'The install or build command failed.',
  agent_not_started: 'The agent could not be started.',
  agent_error: 'The agent reported an error.',
  no_turns: 'The agent ended without doing any work on the prompt.',
  no_result: 'The agent stopped without reporting a result (it may have crashed).',
  token_cap: "The agent reached the run's token limit.",
  max_duration: "The agent reached the run's time limit.",
  runner_terminated: 'The run was stopped before it finished.',
  runner_error: 'The run hit an internal error.',
  agent_overloaded: 'The agent’s API was overloaded.',
  agent_rate_limited: 'The agent’s API refused more requests for now (rate limit).',
  agent_unreachable: 'The agent could not reach its API.',
  agent_auth_failed: 'The agent’s API refused its credentials (a missing, wrong or expired key or login).',
  agent_turn_limit: 'The agent reached its own limit of turns.',
  agent_bad_input: 'The agent refused its input (the prompt was too long for the model, or the request was invalid).',
};

/** Reasons baton itself records (not a runner): the workspace's reconcile. */
const BATON_FAILURE_SENTENCES: Readonly<Record<string, string>> = {
  workspace_lost: 'The workspace was lost before the run finished.',
};

/** The general sentence for a machine-readable failure (`agent_error`, `workspace_lost`, …); undefined for any other text. */
export function failureSentence(code: string): string | undefined {
  return Object.hasOwn(RUNNER_FAILURE_SENTENCES, code)
    ? RUNNER_FAILURE_SENTENCES[code]
    : Object.hasOwn(BATON_FAILURE_SENTENCES, code)
      ? BATON_FAILURE_SENTENCES[code]
      : undefined;
}

/** The sentence for `{{error}}` in a final comment; empty for a run that did not fail. */
export function publicReason(run: Pick<Run, 'lastError'>, event: Pick<RunEvent, 'type' | 'fromStatus'>): string {
  if (event.type === RUN_EVENT.failed && run.lastError?.startsWith(OUTCOME_MISSING)) return run.lastError.slice(OUTCOME_MISSING.length);
  const reported = RUNNER_FAILURE_SENTENCES[run.lastError ?? ''] ?? BATON_FAILURE_SENTENCES[run.lastError ?? ''];
  switch (event.type) {
    case RUN_EVENT.cancelled:
      return 'It was cancelled.';
    // The amounts and the scope stay in baton: an issue may be public.
    case RUN_EVENT.held:
      return 'A daily budget for agent runs is spent. It starts by itself when the budget resets or is raised.';
    case RUN_EVENT.dead:
      return 'The workspace could not be started.';
    case RUN_EVENT.timedOut:
      return reported ?? 'No result arrived in time.';
    case RUN_EVENT.failed:
      if (reported) return reported;
      return event.fromStatus === RUN_STATUS.provisioning
        ? 'The workspace could not be set up.'
        : 'The run ended without reporting a result.';
    default:
      return '';
  }
}
