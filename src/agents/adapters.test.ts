import { describe, expect, it } from 'vitest';
import { AGENT_ADAPTERS, agentAdapter, FAILURE_KIND, type AgentSession, type AgentStream } from './index.js';

const skip: AgentSession = { allowedTools: null, model: null, skipPermissions: true };
const exit0 = { code: 0, signal: null, stderr: [] };
const feed = (stream: AgentStream, events: unknown[]) => events.flatMap((e) => stream.push(typeof e === 'string' ? e : JSON.stringify(e)));

describe('every adapter keeps the prompt out of the option parser', () => {
  const hostile = '--dangerously-do-something resume /evil $(rm -rf ~)';
  for (const name of ['codex', 'gemini', 'opencode'] as const) {
    it(`${name}: the prompt goes to stdin, untouched, and argv holds only baton's own words`, () => {
      const adapter = agentAdapter(name);
      const inv = adapter.invocation([adapter.executable], hostile, { ...skip, model: 'some/model-1' });
      expect(inv.promptVia).toBe('stdin');
      expect(inv.stdin).toBe(name === 'gemini' ? hostile : hostile);
      expect(inv.args.join(' ')).not.toContain('evil');
      expect(inv.args).toContain('--model=some/model-1');
    });
  }
  it('gemini and claude give a leading "/" a newline so it is never a slash command', () => {
    expect(agentAdapter('gemini').invocation(['gemini'], '/help me', skip).stdin).toBe('\n/help me');
    expect(agentAdapter('claude').invocation(['claude'], '/help me', skip).args.at(-1)).toBe('\n/help me');
  });
  it('refuses a {prompt} template and resumes only well-formed session ids', () => {
    expect(() => agentAdapter('codex').invocation(['codex', '{prompt}'], 'x', skip)).toThrow(/executable only/);
    expect(() => agentAdapter('codex').resumeInvocation(['codex'], '--last', 'x', skip)).toThrow(/session id/);
    expect(agentAdapter('codex').resumeInvocation(['codex'], '0199a213-81c0', 'more', skip).args.slice(-3)).toEqual([
      'resume',
      '0199a213-81c0',
      '-',
    ]);
    expect(agentAdapter('gemini').resumeInvocation(['gemini'], 'abc', 'more', skip).args).toContain('--resume=abc');
    expect(agentAdapter('opencode').resumeInvocation(['opencode'], 'ses_1', 'more', skip).args).toContain('--session=ses_1');
    expect(agentAdapter('claude').resumeInvocation(['claude'], 'sess-1', 'more', skip).args).toContain('--resume=sess-1');
  });
  it('claude resumes a session with the permissions and tools of its first turn', () => {
    const session = { allowedTools: ['Bash(git:*)'], model: null, skipPermissions: true, canAsk: true };
    const first = agentAdapter('claude').invocation(['claude'], 'go', session).args;
    const resumed = agentAdapter('claude').resumeInvocation(['claude'], 'sess-1', 'more', session).args;
    expect(resumed.filter((a) => a !== '--resume=sess-1' && a !== 'more')).toEqual(first.filter((a) => a !== 'go'));
    expect(resumed).toContain('mcp__baton__ask');
  });
  it('permissions: skipped only when the stage says so', () => {
    const ask = { ...skip, skipPermissions: false };
    expect(agentAdapter('codex').invocation(['codex'], 'x', skip).args).toContain('--dangerously-bypass-approvals-and-sandbox');
    expect(agentAdapter('codex').invocation(['codex'], 'x', ask).args).toContain('--sandbox=workspace-write');
    expect(agentAdapter('gemini').invocation(['gemini'], 'x', ask).args).not.toContain('--approval-mode=yolo');
    expect(agentAdapter('opencode').invocation(['opencode'], 'x', ask).args).not.toContain('--auto');
  });
  it('each credential becomes only its own CLI’s variables', () => {
    expect(agentAdapter('codex').credentialEnv('k', skip)).toEqual({ CODEX_API_KEY: 'k', OPENAI_API_KEY: 'k' });
    expect(agentAdapter('gemini').credentialEnv('k', skip)).toEqual({ GEMINI_API_KEY: 'k' });
    expect(agentAdapter('opencode').credentialEnv('k', { ...skip, model: 'anthropic/claude-sonnet-4-5' })).toEqual({
      ANTHROPIC_API_KEY: 'k',
    });
    expect(agentAdapter('opencode').credentialEnv('k', { ...skip, model: 'openrouter/x' })).toEqual({ OPENROUTER_API_KEY: 'k' });
    for (const adapter of Object.values(AGENT_ADAPTERS)) expect(adapter.credentialEnv(undefined, skip)).toEqual({});
  });
});

describe('codex stream', () => {
  it('ends with the last agent message, the session and the usage with cached input apart', () => {
    const s = agentAdapter('codex').createStream();
    const lines = feed(s, [
      { type: 'thread.started', thread_id: 't-1' },
      { type: 'turn.started' },
      { type: 'item.completed', item: { id: 'i0', type: 'agent_message', text: 'first' } },
      {
        type: 'item.completed',
        item: { id: 'i1', type: 'command_execution', command: 'ls', aggregated_output: 'a', exit_code: 0, status: 'completed' },
      },
      { type: 'item.completed', item: { id: 'i2', type: 'agent_message', text: 'final answer' } },
      { type: 'turn.completed', usage: { input_tokens: 1000, cached_input_tokens: 800, output_tokens: 50 } },
      'not json',
    ]);
    expect(lines).toContain('not json');
    expect(s.sessionId).toBe('t-1');
    expect(s.outcome(exit0)).toEqual({
      status: 'succeeded',
      summary: 'final answer',
      usage: { inputTokens: 200, outputTokens: 50, cacheReadInputTokens: 800, cacheCreationInputTokens: 0 },
      costUsd: null,
    });
  });
  it('maps turn.failed by its text: rate limit, auth, no connection', () => {
    const kind = (message: string) => {
      const s = agentAdapter('codex').createStream();
      feed(s, [
        { type: 'error', message: 'Reconnecting... 2/5' },
        { type: 'turn.failed', error: { message } },
      ]);
      return s.outcome({ code: 1, signal: null, stderr: [] })?.kind;
    };
    expect(kind('exceeded retry limit, last status: 429 Too Many Requests')).toBe(FAILURE_KIND.agentRateLimited);
    expect(kind('unexpected status 401 Unauthorized: Incorrect API key provided')).toBe(FAILURE_KIND.agentAuth);
    expect(kind('stream disconnected before completion: error sending request')).toBe(FAILURE_KIND.agentUnreachable);
    expect(kind('unexpected status 503 Service Unavailable')).toBe(FAILURE_KIND.agentOverloaded);
    expect(kind('unexpected status 400 Bad Request: {"error":{"type":"invalid_request_error"}}')).toBe(FAILURE_KIND.agentBadInput);
  });
  it('says which argument clap refused (exit 2 before any event) as bad input', () => {
    const s = agentAdapter('codex').createStream();
    expect(
      s.outcome({ code: 2, signal: null, stderr: ["error: unexpected argument '--bogus' found", '', 'Usage: codex exec'] }),
    ).toMatchObject({
      status: 'failed',
      kind: FAILURE_KIND.agentBadInput,
      summary: "Codex CLI refused its arguments (exit code 2): error: unexpected argument '--bogus' found",
    });
  });
  it('a run with no turn at all has no result', () => {
    const s = agentAdapter('codex').createStream();
    feed(s, [{ type: 'thread.started', thread_id: 't' }]);
    expect(s.outcome({ code: 2, signal: null, stderr: [] })).toBeNull();
  });
});

describe('gemini stream', () => {
  const stats = {
    total_tokens: 1100,
    input_tokens: 1000,
    output_tokens: 100,
    cached: 600,
    input: 400,
    duration_ms: 1,
    tool_calls: 0,
    models: {},
  };
  it('joins the deltas of the last reply and reads stats', () => {
    const s = agentAdapter('gemini').createStream();
    feed(s, [
      { type: 'init', session_id: 's-1', model: 'gemini-2.5-pro' },
      { type: 'message', role: 'user', content: 'do it' },
      { type: 'message', role: 'assistant', content: 'looking', delta: true },
      { type: 'tool_use', tool_name: 'ls', tool_id: '1', parameters: {} },
      { type: 'tool_result', tool_id: '1', status: 'success', output: 'ok' },
      { type: 'message', role: 'assistant', content: 'done ', delta: true },
      { type: 'message', role: 'assistant', content: 'now', delta: true },
      { type: 'result', status: 'success', stats },
    ]);
    expect([s.sessionId, s.model]).toEqual(['s-1', 'gemini-2.5-pro']);
    expect(s.outcome(exit0)).toMatchObject({
      status: 'succeeded',
      summary: 'done now',
      usage: { inputTokens: 400, outputTokens: 100, cacheReadInputTokens: 600, cacheCreationInputTokens: 0 },
    });
  });
  it('maps exit codes: 41 authentication (from stderr alone), 53 turn limit, 429 in the text', () => {
    const none = agentAdapter('gemini').createStream();
    expect(none.outcome({ code: 41, signal: null, stderr: ['Please set an Auth method in x or specify GEMINI_API_KEY'] })).toMatchObject({
      kind: FAILURE_KIND.agentAuth,
      summary: expect.stringContaining('Please set an Auth method'),
    });
    const turns = agentAdapter('gemini').createStream();
    feed(turns, [
      { type: 'result', status: 'error', error: { type: 'FatalTurnLimitedError', message: 'Reached max session turns' }, stats },
    ]);
    expect(turns.outcome({ code: 53, signal: null, stderr: [] })?.kind).toBe(FAILURE_KIND.agentTurnLimit);
    const quota = agentAdapter('gemini').createStream();
    feed(quota, [
      { type: 'result', status: 'error', error: { type: 'Error', message: '[API Error: quota (Status: 429 RESOURCE_EXHAUSTED)]' }, stats },
    ]);
    expect(quota.outcome({ code: 1, signal: null, stderr: [] })?.kind).toBe(FAILURE_KIND.agentRateLimited);
    const input = agentAdapter('gemini').createStream();
    expect(input.outcome({ code: 42, signal: null, stderr: ['Unknown command: /x'] })).toMatchObject({
      kind: FAILURE_KIND.agentBadInput,
      summary: 'Gemini CLI refused its input (exit code 42): Unknown command: /x',
    });
  });
});

describe('opencode stream', () => {
  const finish = (input: number, output: number, cost: number, read = 0) => ({
    type: 'step_finish',
    sessionID: 'ses_1',
    part: { type: 'step-finish', reason: 'stop', cost, tokens: { input, output, reasoning: 5, cache: { read, write: 2 } } },
  });
  it('sums steps: tokens as they stream (for the cap) and the reported cost', () => {
    const s = agentAdapter('opencode').createStream();
    feed(s, [{ type: 'step_start', sessionID: 'ses_1', part: {} }, finish(100, 10, 0.01)]);
    expect(s.streamedTokens).toBe(117);
    feed(s, [{ type: 'text', sessionID: 'ses_1', part: { type: 'text', text: 'all done' } }, finish(20, 5, 0.02, 100)]);
    expect(s.sessionId).toBe('ses_1');
    const outcome = s.outcome(exit0);
    expect(outcome).toMatchObject({ status: 'succeeded', summary: 'all done' });
    expect(outcome?.costUsd).toBeCloseTo(0.03);
    expect(outcome?.usage).toEqual({ inputTokens: 120, outputTokens: 25, cacheReadInputTokens: 100, cacheCreationInputTokens: 4 });
  });
  it('maps error events: ProviderAuthError, a 429', () => {
    const auth = agentAdapter('opencode').createStream();
    feed(auth, [
      {
        type: 'error',
        sessionID: 's',
        error: { name: 'ProviderAuthError', data: { providerID: 'anthropic', message: 'invalid x-api-key' } },
      },
    ]);
    expect(auth.outcome({ code: 1, signal: null, stderr: [] })).toMatchObject({ status: 'failed', kind: FAILURE_KIND.agentAuth });
    const limited = agentAdapter('opencode').createStream();
    feed(limited, [
      { type: 'error', sessionID: 's', error: { name: 'APIError', data: { message: 'Rate limit exceeded', statusCode: 429 } } },
    ]);
    expect(limited.outcome({ code: 1, signal: null, stderr: [] })?.kind).toBe(FAILURE_KIND.agentRateLimited);
  });
});

describe('transcripts and egress', () => {
  it('says where each CLI keeps its sessions and which hosts it needs', () => {
    expect(agentAdapter('claude').transcriptPaths('/home/u', '/work/my.repo')).toEqual(['/home/u/.claude/projects/-work-my-repo']);
    expect(agentAdapter('codex').transcriptPaths('/home/u', '/w')).toEqual(['/home/u/.codex/sessions']);
    expect(agentAdapter('opencode').transcriptPaths('/home/u', '/w')).toEqual(['/home/u/.local/share/opencode']);
    expect(agentAdapter('codex').egressHosts).toContain('api.openai.com');
    expect(agentAdapter('gemini').egressHosts).toContain('generativelanguage.googleapis.com');
  });
});

describe("each agent's usage is a claim", () => {
  // A negative, non-finite or absurd count would be a credit to every budget: it counts as 0,
  // and the run's log says what was refused (budgets/claims.ts).
  it('codex: a refused turn.completed count is 0 with a [baton] refused line', () => {
    const s = agentAdapter('codex').createStream();
    const lines = feed(s, [
      { type: 'thread.started', thread_id: 't' },
      { type: 'turn.completed', usage: { input_tokens: -5_000_000_000, cached_input_tokens: 10, output_tokens: 1e12 } },
    ]);
    expect(lines.filter((l) => l.startsWith('[baton] refused'))).toEqual([
      expect.stringContaining('turn.completed usage.input_tokens = -5000000000'),
      expect.stringContaining('turn.completed usage.output_tokens = 1000000000000'),
    ]);
    expect(s.streamedUsage).toEqual({ inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 10, cacheCreationInputTokens: 0 });
  });
  it('gemini: refused result stats count as 0, with a line each', () => {
    const s = agentAdapter('gemini').createStream();
    const lines = feed(s, [
      { type: 'init', session_id: 's', model: 'm' },
      { type: 'result', status: 'success', stats: { input_tokens: 'lots', output_tokens: -1, cached: 0 } },
    ]);
    expect(lines.filter((l) => l.startsWith('[baton] refused'))).toHaveLength(2);
    expect(lines.join('\n')).toContain('result stats.output_tokens = -1');
    expect(s.streamedTokens).toBe(0);
  });
  it('opencode: a negative reported cost is 0, never a credit, and the tokens are checked too', () => {
    const s = agentAdapter('opencode').createStream();
    const lines = feed(s, [
      { type: 'step_start', sessionID: 's', part: {} },
      {
        type: 'step_finish',
        sessionID: 's',
        part: { cost: 0.5, tokens: { input: 10, output: 5, reasoning: 0, cache: { read: 0, write: 0 } } },
      },
      {
        type: 'step_finish',
        sessionID: 's',
        part: { cost: -1000, tokens: { input: 10, output: 5, reasoning: 0, cache: { read: -7, write: 0 } } },
      },
      { type: 'text', sessionID: 's', part: { text: 'done' } },
    ]);
    expect(lines.filter((l) => l.startsWith('[baton] refused'))).toEqual([
      expect.stringContaining('step_finish part.tokens.cache.read = -7'),
      expect.stringContaining('step_finish part.cost = -1000'),
    ]);
    const outcome = s.outcome(exit0);
    expect(outcome?.costUsd).toBeCloseTo(0.5);
    expect(outcome?.usage).toEqual({ inputTokens: 20, outputTokens: 10, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
  });
});
