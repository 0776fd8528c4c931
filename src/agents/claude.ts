import path from 'node:path';
import { createStreamParser, judgeResult } from './claude-stream.js';
import { checkSessionId, neutraliseSlash, splitCommand } from './common.js';
import { CLAUDE_PRINT_ARGS, PROMPT_ARGUMENT_MAX_BYTES, claudeInvocation, claudeSessionArgs } from './invocation.js';
import type { AgentAdapter, AgentStream } from './types.js';

/**
 * Claude Code (`@anthropic-ai/claude-code`, bin `claude`): `-p --output-format stream-json
 * --verbose`, the last `result` message decides (../shared/reference/claude-code/STREAM-JSON.md).
 * The argv rules are in invocation.ts; the stream in claude-stream.ts.
 */
export const claudeAdapter: AgentAdapter = {
  name: 'claude',
  title: 'Claude Code',
  executable: 'claude',
  npmPackage: '@anthropic-ai/claude-code',
  reportsCost: true,
  credential: {
    secret: 'CLAUDE_CODE_OAUTH_TOKEN',
    serverEnv: 'CLAUDE_OAUTH_TOKEN',
    doc: 'Claude Code OAuth token (claude setup-token)',
  },
  egressHosts: ['api.anthropic.com', 'statsig.anthropic.com', 'console.anthropic.com'],
  invocation: (command, prompt, session) => claudeInvocation(command, prompt, session),
  resumeInvocation(command, sessionId, reply, session) {
    const { executable, prefix } = splitCommand(command, 'Claude Code');
    const args = [...prefix, ...CLAUDE_PRINT_ARGS, `--resume=${checkSessionId(sessionId)}`, ...claudeSessionArgs(session)];
    const text = neutraliseSlash(reply);
    if (Buffer.byteLength(text) > PROMPT_ARGUMENT_MAX_BYTES) return { command: executable, args, stdin: text, promptVia: 'stdin' };
    return { command: executable, args: [...args, '--', text], stdin: null, promptVia: 'argument' };
  },
  credentialEnv: (secret): Record<string, string> => (secret ? { CLAUDE_CODE_OAUTH_TOKEN: secret } : {}),
  // ~/.claude/projects/<cwd with every non-alphanumeric character as "-">/<session id>.jsonl
  transcriptPaths: (home, cwd) => [path.join(home, '.claude', 'projects', cwd.replace(/[^A-Za-z0-9]/g, '-'))],
  createStream(): AgentStream {
    const parser = createStreamParser();
    return {
      push: (line) => parser.push(line),
      get streamedUsage() {
        return parser.streamedUsage;
      },
      get streamedTokens() {
        return parser.streamedTokens;
      },
      get sessionId() {
        return parser.sessionId;
      },
      get model() {
        return parser.model;
      },
      outcome() {
        const result = parser.result;
        if (!result) return null;
        const streamed = parser.streamedTokens > 0 ? parser.streamedUsage : null;
        return { ...judgeResult(result), usage: result.usage ?? streamed, costUsd: result.costUsd };
      },
    };
  },
};
