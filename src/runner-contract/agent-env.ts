/**
 * The checks of the runner settings baton passes to local runs from its own environment
 * (`AGENT_PASSTHROUGH_ENV`). `baton config check`, `baton serve` and `baton doctor` get them from
 * the configuration pass, and `baton agent` applies the same ones inside the workspace, so a value
 * one of them accepts is never refused by another (or by the run, as a dead run, later).
 */

/** BATON_AGENT_COMMAND parsed, or undefined when it is not a JSON array of strings. */
export function parseAgentCommand(raw: string): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    if (Array.isArray(parsed) && parsed.length > 0 && parsed.every((a) => typeof a === 'string') && parsed[0] !== '')
      return parsed as string[];
  } catch {
    // Not JSON: reported by the caller.
  }
  return undefined;
}

/** Where the messages below send a reader for the whole story (the anchor is checked by test/integration/docs-links.test.ts). */
const SEE = 'see docs/troubleshooting.md#the-agent-command';

/** The problem of a malformed BATON_AGENT_COMMAND, with the JSON form of what was probably meant. */
export function agentCommandProblem(raw: string): string {
  const words = raw.trim().split(/\s+/).filter(Boolean);
  const meant = words.length > 0 && !raw.trim().startsWith('[') ? `, e.g. ${JSON.stringify(words)}` : '';
  return `BATON_AGENT_COMMAND must be a JSON array of strings such as ["aider","--message","{prompt}"]${meant}, got ${JSON.stringify(raw)}; ${SEE}`;
}

/** Every problem of the runner settings in `env` (the variables `baton agent` reads), one line each. */
export function agentEnvProblems(env: Readonly<Record<string, string | undefined>>): string[] {
  const problems: string[] = [];
  const raw = env.BATON_AGENT_COMMAND;
  const command = raw === undefined ? undefined : parseAgentCommand(raw);
  if (raw !== undefined && command === undefined) problems.push(agentCommandProblem(raw));
  const output = env.BATON_AGENT_OUTPUT ?? 'stream-json';
  if (output !== 'stream-json' && output !== 'text') problems.push(`BATON_AGENT_OUTPUT must be stream-json or text, got "${output}"`);
  if (output === 'stream-json' && command?.some((arg) => arg.includes('{prompt}'))) {
    problems.push(
      `BATON_AGENT_COMMAND for stream-json output names the Claude Code executable only, such as ["claude"] (baton adds -p, the output options, permissions, model and the prompt); got ${JSON.stringify(raw)}; ${SEE}`,
    );
  }
  if (output === 'text' && !command) problems.push('BATON_AGENT_OUTPUT=text needs BATON_AGENT_COMMAND (the argv of the CLI agent)');
  const grace = env.BATON_KILL_GRACE_MS;
  if (grace !== undefined && !/^\d+$/.test(grace)) problems.push(`BATON_KILL_GRACE_MS must be a whole number >= 0, got "${grace}"`);
  return problems;
}
