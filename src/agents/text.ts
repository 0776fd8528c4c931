import { templateInvocation } from './invocation.js';
import { RunFailure } from './errors.js';
import { emptyUsage } from './outcome.js';
import type { AgentAdapter, AgentStream } from './types.js';

/**
 * Any other CLI, from a template (`BATON_AGENT_COMMAND` with `{prompt}`, or the prompt on stdin):
 * no stream to parse, so no usage, no cost, no resume; exit code 0 is success and the last output
 * lines are the summary (the runner builds it, with stderr, in agent-process.ts).
 */
export const textAdapter: AgentAdapter = {
  name: 'text',
  title: 'a text-mode CLI',
  executable: '',
  npmPackage: null,
  reportsCost: false,
  credential: null,
  egressHosts: [],
  invocation: (command, prompt) => templateInvocation(command, prompt),
  resumeInvocation() {
    throw new RunFailure('a text-mode agent cannot resume a session: its CLI reports none');
  },
  credentialEnv: () => ({}),
  transcriptPaths: () => [],
  createStream(): AgentStream {
    return {
      push: (line) => [line],
      streamedUsage: emptyUsage(),
      streamedTokens: 0,
      sessionId: null,
      model: null,
      outcome: () => null,
    };
  },
};
