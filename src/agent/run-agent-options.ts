import type { AgentName, ModelPrice } from '../agents/index.js';
import type { RunnerResume, SetupToken } from '../runner-contract/index.js';
import type { SpawnFunction } from './process-group.js';

export const DEFAULT_MAX_DURATION_MS = 90 * 60_000;

/** What `runAgent` runs: the stage, where it reports, and the limits (see cli/agent-settings.ts for where each comes from). */
export interface RunAgentOptions {
  /** Stage name (`TASK_TYPE`): picks `.claude/commands/<stage>.md`. */
  stage: string;
  /** Issue or PR number (`ISSUE_NUMBER`); `$ARGUMENTS` for most stages. */
  issueNumber?: string;
  /** `DEPLOY_ENV`; `$ARGUMENTS` for the devops stage. */
  deployEnv?: string;
  /** `REPO_CLONE_URL`; may be omitted when `workdir` already is a checkout. */
  cloneUrl?: string;
  /** Directory name of the clone inside `workdir` (`GITEA_REPO`). @default derived from cloneUrl */
  repoName?: string;
  /** Where the repository is cloned and `.baton/agent.log` is written (`BATON_WORKDIR`). */
  workdir: string;
  /** Working branch; the remote's default branch is used when it does not exist. @default 'develop' */
  branch?: string;
  /** What `$ARGUMENTS` stands for in the prompt (`BATON_ARGUMENTS`). @default the issue number (the deploy environment for devops) */
  arguments?: string;
  /** Full completion URL (`CALLBACK_URL`). */
  callbackUrl: string;
  /** @default callbackUrl with `/complete` replaced by `/progress` */
  progressUrl?: string;
  callbackToken: string;
  /**
   * Base env of every step. `ANTHROPIC_API_KEY`, `CALLBACK_TOKEN`, `GITEA_TOKEN` and
   * `CLAUDE_CODE_OAUTH_TOKEN` are always removed: each step gets only the secrets it needs.
   */
  env: NodeJS.ProcessEnv;
  /** Put into the agent's env as `CLAUDE_CODE_OAUTH_TOKEN` (when the agent is Claude Code). */
  claudeOauthToken?: string;
  /**
   * Which agent runs the stage (`BATON_AGENT`): its adapter builds the argv and reads the stream.
   * `text` is the same as outputFormat `text`.
   * @default 'claude'
   */
  agent?: AgentName;
  /** The stage's model (`BATON_AGENT_MODEL`); wins over a command file's `model`. @default the CLI's default */
  model?: string;
  /**
   * The agent's credential (the runner secret its adapter names: CODEX_API_KEY, GEMINI_API_KEY,
   * OPENCODE_API_KEY); the adapter turns it into the variables its CLI reads. Claude Code's is
   * `claudeOauthToken`.
   */
  agentSecret?: string;
  /**
   * What the agent's tokens cost (USD per million, `BATON_AGENT_PRICE`). A CLI that reports no cost
   * is priced with it (the completion carries the computed cost, `costSource: computed`); a cost
   * a CLI reports is checked against it, and one far from it is refused for the computed one.
   */
  agentPrice?: ModelPrice;
  /**
   * Forge token of the stage's bot: git credentials for http(s) clone URLs (git steps and the
   * agent) and `GITEA_TOKEN` of the agent; masked in logs.
   */
  forgeToken?: string;
  /**
   * Which tokens the install and build commands get. They run the repository's code, so by
   * default none: `forge` adds `GITEA_TOKEN` and git credentials, `agent` adds `CLAUDE_CODE_OAUTH_TOKEN`.
   * @default []
   */
  setupTokens?: readonly SetupToken[];
  /**
   * The agent CLI. With `stream-json` output it names the Claude Code executable only, and the
   * runner adds `-p --output-format stream-json --verbose`, the permission flags, `--model` and
   * `-- <prompt>` (or the prompt on stdin when it is over 100 KiB). With `text` output it is the
   * whole argv: each `{prompt}` is replaced by the prompt, and without `{prompt}` the prompt
   * goes to stdin.
   * @default CLAUDE_COMMAND (`['claude']`)
   * @example ['npx', '--no-install', 'claude']
   * @example ['aider', '--yes-always', '--message', '{prompt}'] (with outputFormat 'text')
   */
  agentCommand?: readonly string[];
  /**
   * `stream-json`: Claude Code NDJSON, the last `result` decides. `text`: any other CLI; exit code
   * 0 is success and the last output lines are the summary.
   * @default 'stream-json'
   */
  outputFormat?: 'stream-json' | 'text';
  /**
   * Whether Claude Code runs with `--dangerously-skip-permissions` when the stage's command file
   * has no `allowed-tools` (with `allowed-tools` it gets `--allowedTools` and never skips).
   * The server sends the stage's setting (`BATON_STAGE_SKIP_PERMISSIONS`).
   * @default true
   */
  skipPermissions?: boolean;
  /** Whether the stage builds code (runs the install and build commands first). @default the built-in table's answer */
  heavy?: boolean;
  /** Shell command run before the agent on heavy stages. @example 'npm ci' */
  installCommand?: string;
  /** Shell command run after install on heavy stages. @example 'npm run build' */
  buildCommand?: string;
  /** Whole run, clone included. @default DEFAULT_MAX_DURATION_MS (90 min) */
  maxDurationMs?: number;
  /**
   * Stop the agent once its assistant messages used more tokens than this (input + output +
   * cache read + cache creation, summed over API responses). 0 = no cap.
   * @default 0
   */
  tokenCap?: number;
  /** Time between SIGTERM and SIGKILL of the agent's process group. @default 10_000 */
  killGraceMs?: number;
  /** Live log over HTTP; `false` disables it. Port 0 picks a free port. @default false */
  logServer?: false | { port: number; host?: string };
  onLogServerListening?: (url: string) => void;
  /** Every (masked) log line, e.g. to echo on stdout. */
  onLogLine?: (line: string) => void;
  /** Longest time spent retrying the completion callback. @default 900_000 */
  callbackMaxRetryMs?: number;
  /** @default 1_000 */
  callbackRetryBaseMs?: number;
  /** @default 1_000 */
  progressIntervalMs?: number;
  /**
   * A conversation's next turn (`BATON_RESUME_*`): the session is restored from the transcript
   * the server kept and resumed with the reply as the prompt, on the branch it worked on.
   */
  resume?: RunnerResume;
  /** Aborting it stops the run as "runner terminated" (the CLI aborts on SIGTERM). */
  signal?: AbortSignal;
  /** Where the built-in stage prompts live. @default the package's assets/ */
  assetsDir?: string;
  spawn?: SpawnFunction;
  fetch?: typeof fetch;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}
