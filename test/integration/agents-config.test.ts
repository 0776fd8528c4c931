import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config-schema/index.js';
import { loadConfig } from '../../src/server/index.js';
import { buildWorkspaceSpec } from '../../src/server/workspaces.js';

/** `agents:` and a stage's `agent`/`model`, through the one configuration pass and into a run's workspace. */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function setup(yaml: string, bin: string[] = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-agents-config-'));
  dirs.push(dir);
  const binDir = path.join(dir, 'bin');
  fs.mkdirSync(binDir);
  for (const name of bin) fs.writeFileSync(path.join(binDir, name), '#!/bin/sh\n', { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'baton.yaml'), yaml);
  return { BATON_CONFIG: path.join(dir, 'baton.yaml'), DATA_DIR: path.join(dir, 'data'), PATH: binDir, WORKSPACE_PROVIDER: 'local' };
}

const problems = (env: Record<string, string>) => {
  try {
    loadConfig(env, os.tmpdir());
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
};

describe('choosing the agent per stage', () => {
  it('refuses an unknown agent and a named agent whose CLI is missing, naming each', () => {
    const env = setup('pipeline:\n  stages:\n    analyse: { agent: gemini }\n    develop: { agent: aider }\n');
    const found = problems(env).join('\n');
    expect(found).toMatch(/pipeline\.stages\.develop\.agent.*aider/);
    expect(found).toMatch(/pipeline\.stages\.analyse\.agent is gemini, but its CLI "gemini" is not on PATH.*@google\/gemini-cli/);
  });

  it("hands each stage's run its agent, model, command, only its own key and its price", () => {
    const env = {
      ...setup(
        'agents:\n  codex: { model: gpt-5-codex, command: [codex] }\n  gemini: { model: gemini-2.5-flash }\npipeline:\n  stages:\n    analyse: { agent: gemini }\n    develop: { agent: codex, model: gpt-5 }\n',
        ['codex', 'gemini'],
      ),
      BATON_CODEX_API_KEY: 'sk-codex-key',
      BATON_GEMINI_API_KEY: 'gemini-key',
    };
    const { config } = loadConfig(env, os.tmpdir());
    const run = (stage: string) =>
      ({ id: 7, stage, owner: 'acme', repo: 'app', number: 3, payload: {}, agentAttempt: 1 }) as unknown as Parameters<
        typeof buildWorkspaceSpec
      >[1];
    const develop = buildWorkspaceSpec(config, run('develop'), 'ws', 'cb');
    expect(develop).toMatchObject({
      agent: 'codex',
      agentModel: 'gpt-5',
      agentCommand: ['codex'],
      agentSecret: { name: 'CODEX_API_KEY', value: 'sk-codex-key' },
      agentPrice: { input: 1.25, cachedInput: 0.125, output: 10 },
    });
    const analyse = buildWorkspaceSpec(config, run('analyse'), 'ws', 'cb');
    expect(analyse).toMatchObject({
      agent: 'gemini',
      agentModel: 'gemini-2.5-flash',
      agentSecret: { name: 'GEMINI_API_KEY', value: 'gemini-key' },
    });
    const review = buildWorkspaceSpec(config, run('review-code'), 'ws', 'cb');
    expect(review.agent).toBeUndefined();
    expect(review.agentSecret).toBeUndefined();
  });

  it("resumes each agent's own form of session id (OpenCode's ses_…), and never one shaped like an option", () => {
    const { config } = loadConfig(setup('pipeline:\n  stages:\n    analyse: { agent: opencode }\n', ['opencode']), os.tmpdir());
    const resumed = (sessionId: string) =>
      buildWorkspaceSpec(
        config,
        {
          id: 7,
          stage: 'analyse',
          owner: 'acme',
          repo: 'app',
          number: 3,
          payload: { resume: { sessionId, prompt: 'Use PostgreSQL.', by: 'alice', tokensBefore: 10 } },
          agentAttempt: 1,
        } as unknown as Parameters<typeof buildWorkspaceSpec>[1],
        'ws',
        'cb',
      ).resume;
    for (const id of ['ses_dc7e560a9ffe4E4s4yOmq45Ega', '01a23818-6049-7da3-a432-9fb7269ab714']) {
      expect(resumed(id)).toEqual({ sessionId: id, reply: 'Use PostgreSQL.', by: 'alice' });
    }
    for (const id of ['--dangerously-skip-permissions', 'a b', '../x', '']) expect(resumed(id)).toBeUndefined();
  });
});
