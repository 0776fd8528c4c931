import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openConversationTurn } from '../../src/agent/conversation-turn.js';
import { packTranscript, TRANSCRIPT_FORMAT, unpackTranscript } from '../../src/agent/conversation.js';
import type { AgentLog } from '../../src/agent/agent-log.js';
import type { StepResult, StepRunner } from '../../src/agent/checkout.js';
import { agentAdapter } from '../../src/agents/index.js';

/**
 * What the runner keeps at a turn's end for the next: the asking turn's branch (its push goes
 * through baton's forge gateway: a baton restarting meanwhile must not cost the turn's commits),
 * and the session files a retry resumes from. The runner's side, git and the server stood in for.
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

  it('keeps the session files it resumed from when the turn ends without a question (its retry resumes from them)', async () => {
    const sessionFile = {
      path: '.claude/projects/-workspace-app/5f0c1a2b-0000-4000-8000-000000000001.jsonl',
      content: Buffer.from('{"type":"user"}\n'),
    };
    const earlier = packTranscript({
      header: {
        format: TRANSCRIPT_FORMAT,
        version: 1,
        agent: 'claude',
        cwd: '/workspace/app',
        sessionId: '5f0c1a2b-0000-4000-8000-000000000001',
        branch: 'develop',
      },
      files: [sessionFile],
      turns: [{ turn: 1, prompt: 'go', by: 'baton', question: 'Which database?', stream: [], truncated: false }],
    });
    let uploaded: Buffer | null = null;
    const turn = await openConversationTurn({
      adapter: agentAdapter('claude'),
      stateDir,
      home: stateDir,
      log,
      resume: { sessionId: '5f0c1a2b-0000-4000-8000-000000000001', reply: 'PostgreSQL.', by: 'alice' },
      branch: undefined,
      callbackUrl: 'http://baton.internal/api/runs/7/complete',
      token: 'tok',
      fetch: (async (_url: string | URL | Request, init?: RequestInit) => {
        if (init?.method === 'PUT') {
          uploaded = Buffer.from(init.body as Uint8Array);
          return new Response('{}', { status: 200 });
        }
        return new Response(new Uint8Array(earlier), { status: 200 });
      }) as typeof fetch,
      sleep: async () => {},
    });
    turn.restore('/workspace/app');
    const streamFile = path.join(stateDir, 'agent.ndjson');
    fs.writeFileSync(streamFile, '');
    // The resumed turn failed (the agent's API overloaded): no question.
    const asked = await turn.close({
      exec: git([]).exec,
      cwd: '/workspace/app',
      gitEnv: {},
      prompt: 'go',
      sessionId: null,
      streamFile,
      canAsk: true,
    });
    expect(asked).toBeNull();
    const kept = unpackTranscript(uploaded!);
    expect(kept.files.map((f) => [f.path, f.content.toString()])).toEqual([[sessionFile.path, sessionFile.content.toString()]]);
    expect(kept.turns.map((t) => [t.turn, t.by])).toEqual([
      [1, 'baton'],
      [2, 'alice'],
    ]);
  });
});
