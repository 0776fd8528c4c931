import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openConversationTurn } from '../../src/agent/conversation-turn.js';
import type { AgentLog } from '../../src/agent/agent-log.js';
import type { StepResult, StepRunner } from '../../src/agent/checkout.js';
import { agentAdapter } from '../../src/agents/index.js';

/**
 * The asking turn's push goes through baton (the forge gateway): a baton restarting meanwhile
 * must not cost the turn's commits. The runner's side, with git and the server stood in for.
 */
describe('the branch of a turn that asked', () => {
  let stateDir: string;
  let lines: string[];
  const log = { write: (line: string) => lines.push(line), mask: (text: string) => text } as unknown as AgentLog;
  beforeEach(() => {
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-push-'));
    lines = [];
  });
  afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

  /** A git whose pushes answer `pushes` in turn (then the last one); status and branch as a clean `develop`. */
  function git(pushes: StepResult[]) {
    const calls: string[] = [];
    const exec: StepRunner = async (label) => {
      calls.push(label);
      if (label === 'git symbolic-ref') return { code: 0, signal: null, tail: ['develop'] } as StepResult;
      if (label === 'git status') return { code: 0, signal: null, tail: [] } as StepResult;
      return (pushes.length > 1 ? pushes.shift() : pushes[0])!;
    };
    return { exec, pushes: () => calls.filter((c) => c === 'git push').length };
  }
  const refused = (line: string) => ({ code: 128, signal: null, tail: [line] }) as StepResult;

  async function ask(exec: StepRunner) {
    let t = 0;
    const turn = await openConversationTurn({
      adapter: agentAdapter('claude'),
      stateDir,
      home: stateDir,
      log,
      resume: undefined,
      branch: undefined,
      callbackUrl: 'http://baton.internal/api/runs/7/complete',
      token: 'tok',
      fetch: (async () => new Response('{}', { status: 200 })) as typeof fetch,
      sleep: async (ms) => void (t += ms),
      now: () => t,
    });
    fs.writeFileSync(path.join(stateDir, 'question.jsonl'), `${JSON.stringify({ text: 'Which database?' })}\n`);
    const streamFile = path.join(stateDir, 'agent.ndjson');
    fs.writeFileSync(streamFile, '');
    const asked = await turn.close({
      exec,
      cwd: '/workspace/app',
      gitEnv: {},
      prompt: 'go',
      sessionId: '5f0c1a2b-0000-4000-8000-000000000001',
      streamFile,
      canAsk: true,
    });
    return { asked, elapsed: t };
  }

  it('is pushed again while baton cannot be reached, and the question still waits', async () => {
    const down = refused(
      "fatal: unable to access 'http://baton.internal/gateway/acme/app.git/': Failed to connect to baton.internal port 80",
    );
    const { exec, pushes } = git([down, down, down, { code: 0, signal: null, tail: [] } as StepResult]);
    const { asked } = await ask(exec);
    expect(asked).toMatchObject({ text: 'Which database?' });
    expect(pushes()).toBe(4);
    expect(lines).toContain('[baton] pushed branch develop for the next turn');
  });

  it('is not pushed again when the forge refuses it for a reason of its own', async () => {
    const { exec, pushes } = git([refused('remote: refused by baton: pushes to develop are not allowed for this stage')]);
    await ask(exec);
    expect(pushes()).toBe(1);
    expect(lines.some((l) => l.includes('warning: pushing branch develop failed'))).toBe(true);
  });

  it('gives up after the upload’s budget (15 min) and says so', async () => {
    const { exec, pushes } = git([refused('fatal: The requested URL returned error: 502')]);
    const { elapsed } = await ask(exec);
    expect(pushes()).toBeGreaterThan(5);
    expect(elapsed).toBeLessThanOrEqual(15 * 60_000);
    expect(lines.some((l) => l.includes('warning: pushing branch develop failed'))).toBe(true);
  });
});
