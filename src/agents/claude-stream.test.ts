import { describe, expect, it } from 'vitest';
import { createStreamParser, judgeResult, type ResultSummary } from './claude-stream.js';

describe('stream-json parser', () => {
  it('refuses negative, non-finite and absurd usage and cost claims: they count as zero, with a line saying so', () => {
    const parser = createStreamParser();
    const assistant = parser.push(
      JSON.stringify({
        type: 'assistant',
        message: { id: 'm1', content: [], usage: { input_tokens: -5_000_000_000, output_tokens: 7, cache_read_input_tokens: 1e30 } },
      }),
    );
    expect(assistant).toContainEqual(
      expect.stringMatching(/^\[baton\] refused assistant usage\.input_tokens = -5000000000 .*counts as 0$/),
    );
    expect(assistant).toContainEqual(expect.stringMatching(/^\[baton\] refused assistant usage\.cache_read_input_tokens = 1e\+30 /));
    expect(parser.streamedUsage).toEqual({ inputTokens: 0, outputTokens: 7, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
    expect(parser.streamedTokens).toBe(7);

    const result = parser.push(
      JSON.stringify({
        type: 'result',
        subtype: 'success',
        is_error: false,
        num_turns: 1,
        total_cost_usd: -100,
        modelUsage: { opus: { inputTokens: -1, outputTokens: 3, cacheReadInputTokens: '9', cacheCreationInputTokens: 2 } },
      }),
    );
    expect(result.filter((l) => l.startsWith('[baton] refused'))).toHaveLength(3);
    expect(result.join('\n')).toContain('refused result.total_cost_usd = -100');
    expect(parser.result).toMatchObject({
      costUsd: null,
      usage: { inputTokens: 0, outputTokens: 3, cacheReadInputTokens: 0, cacheCreationInputTokens: 2 },
    });
  });

  it('takes the last result, sums modelUsage over models and reads total_cost_usd', () => {
    const parser = createStreamParser();
    parser.push(JSON.stringify({ type: 'result', subtype: 'error_max_turns', is_error: true, errors: ['first'] }));
    parser.push(
      JSON.stringify({
        type: 'result',
        subtype: 'success',
        is_error: false,
        result: 'Done',
        total_cost_usd: 1.23,
        usage: { input_tokens: 1, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
        modelUsage: {
          a: { inputTokens: 10, outputTokens: 20, cacheReadInputTokens: 30, cacheCreationInputTokens: 40 },
          b: { inputTokens: 1, outputTokens: 2, cacheReadInputTokens: 3, cacheCreationInputTokens: 4 },
        },
      }),
    );
    expect(parser.result).toMatchObject({
      subtype: 'success',
      isError: false,
      text: 'Done',
      costUsd: 1.23,
      usage: { inputTokens: 11, outputTokens: 22, cacheReadInputTokens: 33, cacheCreationInputTokens: 44 },
    });
  });

  it('falls back to usage when modelUsage is empty, and to total_cost', () => {
    const parser = createStreamParser();
    parser.push(
      JSON.stringify({
        type: 'result',
        subtype: 'success',
        is_error: true,
        total_cost: 0.5,
        modelUsage: {},
        usage: { input_tokens: 7, output_tokens: 8 },
      }),
    );
    expect(parser.result).toMatchObject({
      isError: true,
      costUsd: 0.5,
      usage: { inputTokens: 7, outputTokens: 8, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    });
  });

  it('counts each assistant message id once, although the CLI repeats it per content block, input + output only', () => {
    const parser = createStreamParser();
    const usage = { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 5, cache_creation_input_tokens: 1 };
    parser.push(JSON.stringify({ type: 'assistant', message: { id: 'm1', content: [{ type: 'text', text: 'a' }], usage } }));
    parser.push(
      JSON.stringify({ type: 'assistant', message: { id: 'm1', content: [{ type: 'tool_use', name: 'Bash', input: {} }], usage } }),
    );
    parser.push(JSON.stringify({ type: 'assistant', message: { id: 'm2', content: [], usage } }));
    // What the run's tokens and the budgets count: cache reads and writes stay in the usage only.
    expect(parser.streamedTokens).toBe(220);
    expect(parser.streamedUsage).toEqual({ inputTokens: 200, outputTokens: 20, cacheReadInputTokens: 10, cacheCreationInputTokens: 2 });
    expect(parser.result).toBeNull();
  });

  it('keeps a running token total over any number of messages', () => {
    const parser = createStreamParser();
    const usage = { input_tokens: 3, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
    for (let i = 0; i < 5_000; i++) {
      const line = JSON.stringify({ type: 'assistant', message: { id: `m${i}`, content: [], usage } });
      parser.push(line);
      parser.push(line);
    }
    expect(parser.streamedTokens).toBe(20_000);
    expect(parser.streamedUsage).toMatchObject({ inputTokens: 15_000, outputTokens: 5_000 });
  });

  it('keeps garbage and unknown types as log lines', () => {
    const parser = createStreamParser();
    expect(parser.push('not json at all')).toEqual(['not json at all']);
    expect(parser.push('[1,2]')).toEqual(['[1,2]']);
    expect(parser.push('{"type":"brand_new","x":1}')).toEqual(['[brand_new] {"type":"brand_new","x":1}']);
    expect(parser.push('   ')).toEqual([]);
  });

  it('describes api_retry so a person sees the CLI is still trying', () => {
    const parser = createStreamParser();
    expect(
      parser.push(
        JSON.stringify({
          type: 'system',
          subtype: 'api_retry',
          attempt: 6,
          max_retries: 10,
          retry_delay_ms: 20_000,
          error_status: null,
          error: 'Connection error.',
        }),
      ),
    ).toEqual(['[api retry] attempt 6/10 in 20.0 s: Connection error.']);
  });
});

describe('judgeResult', () => {
  const result = (over: Partial<ResultSummary>): ResultSummary => ({
    subtype: 'success',
    isError: false,
    text: 'Done',
    errors: [],
    numTurns: 3,
    costUsd: 0.1,
    usage: null,
    ...over,
  });

  it('is a success only for subtype success, is_error false and at least one turn', () => {
    expect(judgeResult(result({}))).toEqual({ status: 'succeeded', summary: 'Done' });
    expect(judgeResult(result({ numTurns: undefined }))).toMatchObject({ status: 'succeeded' });
    expect(judgeResult(result({ isError: true, apiErrorStatus: 529, text: 'Overloaded' }))).toEqual({
      status: 'failed',
      kind: 'agent_overloaded',
      summary: 'agent reported an error (API status 529): Overloaded',
    });
    expect(judgeResult(result({ isError: null }))).toMatchObject({ status: 'failed', kind: 'agent_error' });
    expect(judgeResult(result({ subtype: 'error_max_turns', isError: true, text: undefined, errors: ['x'] }))).toMatchObject({
      status: 'failed',
      kind: 'agent_turn_limit',
      summary: 'agent stopped with error_max_turns after 3 turns: x',
    });
  });

  it('tells the API’s passing trouble (overloaded, rate limit, network) from the agent’s own error', () => {
    const kind = (over: Partial<ResultSummary>) => judgeResult(result({ isError: true, ...over })).kind;
    expect(kind({ apiErrorStatus: 529, text: 'API Error: Repeated 529 Overloaded errors' })).toBe('agent_overloaded');
    expect(kind({ apiErrorStatus: 500, text: 'API Error: 500 Internal server error' })).toBe('agent_overloaded');
    expect(kind({ apiErrorStatus: 429, text: 'API Error: Request rejected (429)' })).toBe('agent_rate_limited');
    // Older CLIs give only the text.
    expect(kind({ text: 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' })).toBe(
      'agent_overloaded',
    );
    expect(kind({ text: 'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}' })).toBe(
      'agent_rate_limited',
    );
    expect(kind({ text: 'API Error: Connection error.' })).toBe('agent_unreachable');
    expect(kind({ text: 'API Error: Connection to the API was lost (ECONNRESET). This is usually temporary — try again.' })).toBe(
      'agent_unreachable',
    );
    // Not passing: no credentials or a refused key, a bad request, the agent's own failure.
    expect(kind({ text: 'Not logged in · Please run /login' })).toBe('agent_auth_failed');
    expect(kind({ text: 'Invalid API key · Please run /login' })).toBe('agent_auth_failed');
    expect(kind({ apiErrorStatus: 401, text: 'API Error: Connection error.' })).toBe('agent_auth_failed');
    expect(kind({ apiErrorStatus: 400, text: 'API Error: 400 prompt is too long' })).toBe('agent_bad_input');
    expect(
      kind({
        text: 'API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212000 tokens > 200000 maximum"}}',
      }),
    ).toBe('agent_bad_input');
    expect(kind({ apiErrorStatus: 418, text: 'something else' })).toBe('agent_error');
  });

  it('fails the zero-turn "success" of an unknown slash command or skill', () => {
    expect(judgeResult(result({ numTurns: 0, text: 'Unknown command: /nosuchcommand', costUsd: 0 }))).toEqual({
      status: 'failed',
      kind: 'no_turns',
      summary: 'Claude Code ran the prompt as a slash command and answered "Unknown command: /nosuchcommand" without doing anything',
    });
    expect(judgeResult(result({ numTurns: 2, text: 'Unknown skill: x' }))).toMatchObject({ status: 'failed', kind: 'no_turns' });
    expect(judgeResult(result({ numTurns: 0, text: 'Hello' }))).toEqual({
      status: 'failed',
      kind: 'no_turns',
      summary: 'the agent ended without taking a single turn (num_turns 0): Hello',
    });
  });
});
