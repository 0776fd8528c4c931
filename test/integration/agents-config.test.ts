import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config-schema/index.js';
import { loadConfig } from '../../src/server/index.js';
import { buildWorkspaceSpec } from '../../src/server/workspaces.js';
import { AGENT_ADAPTERS } from '../../src/agents/index.js';
import { checkCommand } from '../../src/workspaces/local/from-config.js';
import { runBaton } from '../helpers/baton-bin.js';

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
    // Claude Code without a model: no price to check its reported cost against.
    expect(review.agentPrice).toBeUndefined();
  });

  it('hands an agent that reports its cost the price of its model too, to check the claim against', () => {
    const { config } = loadConfig(
      setup('agents:\n  opencode: { model: anthropic/claude-sonnet-4-5 }\npipeline:\n  stages:\n    analyse: { agent: opencode }\n', [
        'opencode',
      ]),
      os.tmpdir(),
    );
    const run = { id: 7, stage: 'analyse', owner: 'acme', repo: 'app', number: 3, payload: {}, agentAttempt: 1 } as unknown as Parameters<
      typeof buildWorkspaceSpec
    >[1];
    expect(buildWorkspaceSpec(config, run, 'ws', 'cb')).toMatchObject({
      agent: 'opencode',
      agentModel: 'anthropic/claude-sonnet-4-5',
      agentPrice: { input: 3, cachedInput: 0.3, output: 15, cacheWrite: 3.75 },
    });
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

describe('what README and docs/pipeline.md tell operators about each agent', () => {
  const repoFile = (name: string) => fs.readFileSync(new URL(`../../${name}`, import.meta.url), 'utf8');
  /** The table row of `agent` in a document (`| \`codex\` | …`). */
  const row = (doc: string, agent: string) => doc.split('\n').find((l) => l.startsWith(`| \`${agent}\` |`)) ?? '';

  it('names the package, the variable baton reads and the variables the run gets, as the code has them', () => {
    for (const doc of [repoFile('README.md'), repoFile('docs/pipeline.md')]) {
      for (const adapter of Object.values(AGENT_ADAPTERS).filter((a) => a.credential)) {
        const line = row(doc, adapter.name);
        expect(line, `${adapter.name} in the table`).toContain(adapter.npmPackage!);
        expect(line).toContain(adapter.credential!.serverEnv);
        const session = {
          allowedTools: null,
          model: adapter.name === 'opencode' ? 'anthropic/claude-sonnet-4-5' : null,
          skipPermissions: true,
        };
        for (const variable of Object.keys(adapter.credentialEnv('k', session)))
          expect(line, `${adapter.name}: ${variable}`).toContain(variable);
      }
    }
  });

  it('reads each key from the variable the docs name, from its _FILE, and from agents.<agent>.apiKeyFile', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-agents-keys-'));
    dirs.push(dir);
    const file = path.join(dir, 'key');
    fs.writeFileSync(file, 'from-a-file\n');
    const base = setup(
      'pipeline:\n  stages:\n    analyse: { agent: codex }\n    develop: { agent: gemini }\n    review-code: { agent: opencode }\n',
      ['codex', 'gemini', 'opencode'],
    );
    const { config } = loadConfig(
      {
        ...base,
        BATON_CODEX_API_KEY: 'codex-key',
        BATON_GEMINI_API_KEY_FILE: file,
        BATON_OPENCODE_API_KEY: 'opencode-key',
        CLAUDE_OAUTH_TOKEN: 'claude-token',
      },
      os.tmpdir(),
    );
    expect(config.agents.settings.codex.apiKey).toBe('codex-key');
    expect(config.agents.settings.gemini.apiKey).toBe('from-a-file');
    expect(config.agents.settings.opencode.apiKey).toBe('opencode-key');
    fs.writeFileSync(base.BATON_CONFIG, `agents:\n  codex: { apiKeyFile: ${JSON.stringify(file)} }\n`);
    expect(loadConfig(base, os.tmpdir()).config.agents.settings.codex.apiKey).toBe('from-a-file');
  });
});

describe("/ready's check: every agent the stages use, and only those", () => {
  it('asks `baton agent --check` about each agent in use with its command, Claude Code only when a stage runs it', () => {
    const runner = ['node', 'baton.js', 'agent'];
    const codexOnly = loadConfig(
      setup('agents:\n  default: codex\n  gemini: { command: [gemini] }\npipeline:\n  stages:\n    analyse: { agent: gemini }\n', [
        'codex',
        'gemini',
      ]),
      os.tmpdir(),
    ).config;
    expect(checkCommand(runner, codexOnly)).toEqual([...runner, '--check', '--check-agent=codex', '--check-agent=gemini=["gemini"]']);
    const withClaude = loadConfig(
      { ...setup('pipeline:\n  stages:\n    analyse: { agent: opencode }\n', ['opencode', 'claude']) },
      os.tmpdir(),
    ).config;
    expect(checkCommand(runner, { ...withClaude, agentEnv: { BATON_AGENT_COMMAND: '["/opt/claude"]' } })).toEqual([
      ...runner,
      '--check',
      '--check-agent=claude=["/opt/claude"]',
      '--check-agent=opencode',
    ]);
  });

  it('`baton agent --check --check-agent …` finds each CLI, or names the missing one and its package', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-agents-check-'));
    dirs.push(dir);
    fs.writeFileSync(path.join(dir, 'codex'), '#!/bin/sh\n', { mode: 0o755 });
    const env = { PATH: dir, HOME: dir };
    const ok = await runBaton(['agent', '--check', '--check-agent=codex', `--check-agent=gemini=${JSON.stringify([process.execPath])}`], {
      env,
    });
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`agent commands: codex ${path.join(dir, 'codex')}, gemini ${process.execPath}`);
    const missing = await runBaton(['agent', '--check', '--check-agent=codex', '--check-agent=gemini'], { env });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(
      `agent command "gemini" (Gemini CLI, agent gemini) is not found on the runner's PATH (${dir}): install Gemini CLI where the runner finds it (npm install -g @google/gemini-cli), or set agents.gemini.command to its absolute path`,
    );
    const unknown = await runBaton(['agent', '--check', '--check-agent=cursor'], { env });
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toMatch(/cursor/);
  });
});
