import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent, type RunAgentOptions } from '../../src/agent/index.js';
import { createRunnerFixture, OAUTH_TOKEN, type RunnerFixture } from '../fakes/agent/runner-fixture.js';

/**
 * The runner with each first-class agent's fake CLI (test/fakes/agent/fake-<agent>.mjs, which
 * parse argv and print streams as the real CLIs do, see SOURCES.md): the summary, tokens and cost
 * it reports, every kind of failure with its reason, the token cap, and which credentials reach
 * the agent.
 */
const FAKES = {
  codex: fileURLToPath(new URL('../fakes/agent/fake-codex.mjs', import.meta.url)),
  gemini: fileURLToPath(new URL('../fakes/agent/fake-gemini.mjs', import.meta.url)),
  opencode: fileURLToPath(new URL('../fakes/agent/fake-opencode.mjs', import.meta.url)),
} as const;
type Agent = keyof typeof FAKES;
const SECRET: Record<Agent, string> = { codex: 'sk-proj-codex-fake', gemini: 'AIza-gemini-fake', opencode: 'sk-ant-opencode-fake' };

let fixture: RunnerFixture;
beforeEach(async () => {
  fixture = await createRunnerFixture();
});
afterEach(() => fixture.close());

function optionsFor(agent: Agent, mode: string, overrides: Partial<RunAgentOptions> = {}) {
  const base = fixture.options('success');
  return {
    ...base,
    agent,
    agentCommand: [process.execPath, FAKES[agent]],
    agentSecret: SECRET[agent],
    model: agent === 'opencode' ? 'anthropic/claude-sonnet-4-5' : undefined,
    env: {
      ...base.env,
      FAKE_AGENT_MODE: mode,
      FAKE_AGENT_RECORD: base.record,
      // Must never reach any agent: baton's own copies of other agents' keys.
      OPENAI_API_KEY: 'sk-from-baton-env',
      GEMINI_API_KEY: 'from-baton-env',
    },
    ...overrides,
  } satisfies RunAgentOptions & { record: string };
}

const read = (file: string) =>
  JSON.parse(fs.readFileSync(file, 'utf8')) as {
    prompt: string;
    promptSource: string;
    credentials: Record<string, string>;
    hasCallbackToken: boolean;
    options: Record<string, unknown>;
  };

const expected: Record<Agent, { summary: string; usage: object; costUsd: number | null; credentials: Record<string, string> }> = {
  codex: {
    summary: 'Codex: done with Implement issue #42 on the develop branch.',
    usage: { inputTokens: 315, outputTokens: 1220, cacheReadInputTokens: 24_448, cacheCreationInputTokens: 0 },
    costUsd: null,
    credentials: { CODEX_API_KEY: SECRET.codex, OPENAI_API_KEY: SECRET.codex },
  },
  gemini: {
    summary: 'Gemini: done with Implement issue #42 on the develop branch.',
    usage: { inputTokens: 6144, outputTokens: 912, cacheReadInputTokens: 12_288, cacheCreationInputTokens: 0 },
    costUsd: null,
    credentials: { GEMINI_API_KEY: SECRET.gemini },
  },
  opencode: {
    summary: 'OpenCode: done with Implement issue #42 on the develop branch.',
    usage: { inputTokens: 11_422, outputTokens: 275, cacheReadInputTokens: 11_000, cacheCreationInputTokens: 0 },
    // Its steps' costs: the tokens at anthropic/claude-sonnet-4-5's list price, as OpenCode computes them.
    costUsd: 0.041691,
    credentials: { ANTHROPIC_API_KEY: SECRET.opencode },
  },
};

describe.each(Object.keys(FAKES) as Agent[])('runAgent with %s', (agent) => {
  it('reports its final answer, tokens and cost; the prompt went to stdin; only its own credential reached it', async () => {
    const opts = optionsFor(agent, 'success');
    const outcome = await runAgent(opts);
    const body = await fixture.receiver.accepted();
    expect(body).toMatchObject({ status: 'succeeded', exitCode: 0, summary: expected[agent].summary, usage: expected[agent].usage });
    if (expected[agent].costUsd === null) expect(body.costUsd).toBeNull();
    else expect(body.costUsd as number).toBeCloseTo(expected[agent].costUsd!, 6);
    expect(outcome.status).toBe('succeeded');
    const record = read(opts.record);
    expect(record.promptSource).toBe('stdin');
    expect(record.prompt).toContain('Implement issue #42 on the develop branch.');
    expect(record.credentials).toEqual(expected[agent].credentials);
    expect(record.hasCallbackToken).toBe(false);
    expect(JSON.stringify(record.credentials)).not.toContain(OAUTH_TOKEN);
  });

  it('stops at the token cap', async () => {
    const opts = optionsFor(agent, 'token-overrun', { tokenCap: 100_000 });
    const body = await runAgent(opts);
    expect(body).toMatchObject({ status: 'failed', error: 'token_cap' });
    expect(body.summary).toMatch(/over the token cap of 100,000/);
  });

  it('a crash mid-stream is a failure with a reason', async () => {
    const body = await runAgent(optionsFor(agent, 'crash'));
    expect(body.status).toBe('failed');
    expect(['no_result', 'agent_error']).toContain(body.error);
    expect(String(body.summary)).not.toBe('');
  });

  it('a rate limit is agent_rate_limited (retried by the server)', async () => {
    const body = await runAgent(optionsFor(agent, 'rate-limited'));
    expect(body).toMatchObject({ status: 'failed', error: 'agent_rate_limited' });
    expect(body.summary).toMatch(/429|[Rr]ate limit/);
  });

  it('an overloaded API is agent_overloaded', async () => {
    expect(await runAgent(optionsFor(agent, 'server-error'))).toMatchObject({ status: 'failed', error: 'agent_overloaded' });
  });

  it('the duration limit stops it', async () => {
    expect(await runAgent(optionsFor(agent, 'hang', { maxDurationMs: 1_500 }))).toMatchObject({
      status: 'timed_out',
      error: 'max_duration',
    });
  });
});

describe('cost for every agent', () => {
  it('prices the tokens of a CLI that reports no cost, and says the cost was computed', async () => {
    const body = await runAgent(optionsFor('codex', 'success', { agentPrice: { input: 1.25, cachedInput: 0.125, output: 10 } }));
    // 315 fresh at 1.25, 24,448 cached at 0.125, 1,220 output at 10 (USD per million)
    expect(body).toMatchObject({ status: 'succeeded', costSource: 'computed' });
    expect(body.costUsd).toBeCloseTo((315 * 1.25 + 24_448 * 0.125 + 1_220 * 10) / 1e6, 6);
  });
  it('keeps the cost a CLI reports when the price table agrees with it, and says so', async () => {
    const sonnet = { input: 3, cachedInput: 0.3, output: 15, cacheWrite: 3.75 };
    const outcome = await runAgent(optionsFor('opencode', 'success', { agentPrice: sonnet }));
    expect(outcome).toMatchObject({ costSource: 'reported', costUsd: expect.closeTo(0.041691, 6) });
    expect(fs.readFileSync(outcome.logFile!, 'utf8')).not.toContain('refused the reported cost');
  });
  it('refuses a reported cost far from the price of its tokens, counting the computed one, and says so in the log', async () => {
    // $0 where the table prices the tokens at $0.04: OpenCode knew no price for the model.
    const sonnet = { input: 3, cachedInput: 0.3, output: 15, cacheWrite: 3.75 };
    const unpriced = await runAgent(optionsFor('opencode', 'unpriced', { agentPrice: sonnet }));
    expect(unpriced).toMatchObject({ status: 'succeeded', costSource: 'computed', costUsd: expect.closeTo(0.041691, 6) });
    expect(fs.readFileSync(unpriced.logFile!, 'utf8')).toContain(
      '[baton] refused the reported cost $0.0000: the price table prices the tokens the agent reported at $0.0417, more than 3 times apart; the computed cost counts',
    );
    expect(await fixture.receiver.accepted()).toMatchObject({ costSource: 'computed', costUsd: expect.closeTo(0.041691, 6) });
    // Far above the price (a table that prices the model 30 times lower) is refused too.
    const cheap = await runAgent(optionsFor('opencode', 'success', { agentPrice: { input: 0.1, cachedInput: 0.01, output: 0.5 } }));
    expect(cheap).toMatchObject({ costSource: 'computed', costUsd: expect.closeTo((11_422 * 0.1 + 11_000 * 0.01 + 275 * 0.5) / 1e6, 6) });
  });
  it('keeps a reported cost the table has no price for', async () => {
    expect(await runAgent(optionsFor('opencode', 'unpriced'))).toMatchObject({ costSource: 'reported', costUsd: 0 });
  });
});

describe('failures only some CLIs have', () => {
  it('codex: a refused key is agent_auth_failed with its words; no connection is agent_unreachable', async () => {
    const auth = await runAgent(optionsFor('codex', 'auth'));
    expect(auth).toMatchObject({ status: 'failed', error: 'agent_auth_failed' });
    expect(auth.summary).toContain('401 Unauthorized');
    expect(await runAgent(optionsFor('codex', 'unreachable'))).toMatchObject({ status: 'failed', error: 'agent_unreachable' });
  });

  it('gemini: no key is exit 41, agent_auth_failed, quoting the CLI; the turn limit is exit 53', async () => {
    const auth = await runAgent(
      optionsFor('gemini', 'success', {
        agentSecret: undefined,
        env: { ...optionsFor('gemini', 'success').env, GEMINI_API_KEY: undefined },
      }),
    );
    expect(auth).toMatchObject({ status: 'failed', error: 'agent_auth_failed', exitCode: 41 });
    expect(auth.summary).toContain('Please set an Auth method');
    const turns = await runAgent(optionsFor('gemini', 'turn-limit'));
    expect(turns).toMatchObject({ status: 'failed', error: 'agent_turn_limit', exitCode: 53 });
    expect(turns.summary).toContain('turn limit');
  });

  it('opencode: ProviderAuthError is agent_auth_failed', async () => {
    const body = await runAgent(optionsFor('opencode', 'auth'));
    expect(body).toMatchObject({ status: 'failed', error: 'agent_auth_failed' });
    expect(body.summary).toContain('invalid x-api-key');
  });
});
