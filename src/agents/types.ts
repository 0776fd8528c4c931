import type { AgentStatus, AgentUsage } from './outcome.js';

/**
 * The agent adapter port: everything baton must know about one agent CLI to run it headless in
 * a workspace and make sense of what it prints. Adapters are data plus pure functions (no I/O):
 * the runner (`src/agent/`) spawns and reads, the server checks and prices.
 */

/** The agents baton runs first class, and `text`: any other CLI, judged by its exit code. */
export const AGENT_NAMES = ['claude', 'codex', 'gemini', 'opencode', 'text'] as const;
export type AgentName = (typeof AGENT_NAMES)[number];

/** How the agent CLI is started: its argv and what goes to its stdin. */
export interface AgentInvocation {
  command: string;
  args: string[];
  /** Written to the agent's stdin, which is then closed; null leaves stdin empty. */
  stdin: string | null;
  /** How the prompt was passed, for the log. */
  promptVia: 'argument' | 'stdin';
}

/** What a stage's configuration and command file decide about the agent session. */
export interface AgentSession {
  /**
   * `allowed-tools` of the command file (Claude Code only): only these run without asking, and
   * permissions are not skipped. null when the file does not say.
   */
  allowedTools: string[] | null;
  /** The model; null = the CLI's default. */
  model: string | null;
  /** Whether the CLI runs without asking for approval (the workspace is the sandbox). */
  skipPermissions: boolean;
  /**
   * Whether the agent can ask (`baton ask` on the run's PATH, and `baton mcp`'s `ask` tool): Claude
   * Code gets the MCP server (`--mcp-config`) and both allowed; the runner sets it, others ignore it.
   */
  canAsk?: boolean;
}

/** What an agent's stream said once the process ended; null from `outcome` = no result at all. */
export interface StreamOutcome {
  status: AgentStatus;
  summary: string;
  /** A FAILURE_KIND on failures. */
  kind?: string;
  usage: AgentUsage | null;
  /** USD as the CLI reported it; null when it reports none (baton prices the tokens then). */
  costUsd: number | null;
}

/** How the agent process ended, with the last lines of its stderr (where some CLIs say why). */
export interface AgentExit {
  code: number | null;
  signal: string | null;
  stderr: readonly string[];
}

/** Reads one agent's stdout, a line at a time, in bounded memory. */
export interface AgentStream {
  /** Returns the readable log lines for one stdout line (garbage is kept verbatim). */
  push(line: string): string[];
  /** Tokens so far, as the stream reported them (what the token cap counts). */
  readonly streamedUsage: AgentUsage;
  /** input + output + cache read + cache creation of `streamedUsage`. */
  readonly streamedTokens: number;
  /** The session (thread) id the CLI announced, for resuming; null until it says. */
  readonly sessionId: string | null;
  /** The model the CLI said it uses; null when it does not say. */
  readonly model: string | null;
  /** The outcome once the process has exited; null when the stream holds no result. */
  outcome(exit: AgentExit): StreamOutcome | null;
}

/** A credential baton hands to the agent inside the run (never through baton's own environment). */
export interface AgentCredential {
  /** The runner secret's name (a line of BATON_SECRETS_FILE). */
  secret: string;
  /** The variable of baton's own environment (or baton.yaml key) the server reads it from. */
  serverEnv: string;
  /** What it is, for docs and errors. */
  doc: string;
}

export interface AgentAdapter {
  readonly name: AgentName;
  /** For people: `Claude Code`. */
  readonly title: string;
  /** The default executable (`claude`); BATON_AGENT_COMMAND or `agents.<name>.command` replace it. */
  readonly executable: string;
  /** The npm package that installs it, for doctor, templates and error messages. */
  readonly npmPackage: string | null;
  /** Whether the CLI reports cost in USD itself (else baton prices tokens from the price table). */
  readonly reportsCost: boolean;
  readonly credential: AgentCredential | null;
  /** Hosts the agent must reach (for an egress gate): its API and its login. */
  readonly egressHosts: readonly string[];
  /** Argv and stdin of a headless run; the prompt is never parsed as an option or a command. */
  invocation(command: readonly string[], prompt: string, session: AgentSession): AgentInvocation;
  /** Argv and stdin that continue session `sessionId` with `reply`. */
  resumeInvocation(command: readonly string[], sessionId: string, reply: string, session: AgentSession): AgentInvocation;
  /** The environment the credential becomes inside the run (only this agent's). */
  credentialEnv(secret: string | undefined, session: AgentSession): Record<string, string>;
  /** Where the CLI keeps a session's transcript, to save and restore for a resume in a fresh workspace. */
  transcriptPaths(home: string, cwd: string): string[];
  createStream(): AgentStream;
}
