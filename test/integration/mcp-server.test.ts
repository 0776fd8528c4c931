import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveMcp } from '../../src/cli/mcp.js';

/** What Claude Code 2.1.197 sent a stdio server it was given with --mcp-config (observed). */
const INITIALIZE = {
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: { roots: {}, elicitation: {} },
    clientInfo: { name: 'claude-code', title: 'Claude Code', version: '2.1.197' },
  },
  jsonrpc: '2.0',
  id: 0,
};

describe('baton mcp', () => {
  let dir: string;
  let questionFile: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-mcp-'));
    questionFile = path.join(dir, 'question.jsonl');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Sends `messages` (objects, or raw lines), one per line, and returns every line the server wrote. */
  async function exchange(messages: (object | string)[], env: NodeJS.ProcessEnv = { BATON_QUESTION_FILE: questionFile }) {
    const input = new PassThrough();
    const output = new PassThrough();
    let written = '';
    output.on('data', (d: Buffer) => (written += d.toString()));
    const served = serveMcp(input, output, env, '1.2.3');
    for (const m of messages) input.write(`${typeof m === 'string' ? m : JSON.stringify(m)}\n`);
    input.end();
    await served;
    return written
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it('answers Claude Code’s handshake and lists its one tool, one JSON message per line', async () => {
    const answers = await exchange([
      INITIALIZE,
      { method: 'notifications/initialized', jsonrpc: '2.0' },
      { method: 'tools/list', jsonrpc: '2.0', id: 1 },
    ]);
    // The notification gets no answer.
    expect(answers).toHaveLength(2);
    expect(answers[0]).toEqual({
      jsonrpc: '2.0',
      id: 0,
      result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'baton', version: '1.2.3' } },
    });
    const tools = (answers[1]!.result as { tools: { name: string; inputSchema: { required: string[] } }[] }).tools;
    expect(tools.map((t) => t.name)).toEqual(['ask']);
    expect(tools[0]!.inputSchema.required).toEqual(['question']);
  });

  it('answers a protocol version it does not know with its newest', async () => {
    const [answer] = await exchange([{ ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: '2099-01-01' } }]);
    expect((answer!.result as { protocolVersion: string }).protocolVersion).toBe('2025-11-25');
  });

  it('records the question as baton ask does, and tells the agent to end its turn', async () => {
    const [, answer] = await exchange([
      INITIALIZE,
      {
        method: 'tools/call',
        jsonrpc: '2.0',
        id: 2,
        params: { name: 'ask', arguments: { question: '  Keep the --legacy flag?  ', for: 'alice' } },
      },
    ]);
    expect(answer).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: expect.stringContaining('Now end your turn') }] } });
    expect((answer!.result as { isError?: boolean }).isError).toBeUndefined();
    const [entry] = fs
      .readFileSync(questionFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entry).toMatchObject({ text: 'Keep the --legacy flag?', for: 'alice' });
  });

  it('reports a question it cannot record as the tool’s error, for the agent to read', async () => {
    const [outside] = await exchange(
      [{ method: 'tools/call', jsonrpc: '2.0', id: 3, params: { name: 'ask', arguments: { question: 'x' } } }],
      {},
    );
    expect(outside).toMatchObject({
      id: 3,
      result: { isError: true, content: [{ text: expect.stringContaining('inside a baton run only') }] },
    });
    const [badFor] = await exchange([
      { method: 'tools/call', jsonrpc: '2.0', id: 4, params: { name: 'ask', arguments: { question: 'x', for: 'not a login!' } } },
    ]);
    expect(badFor).toMatchObject({ result: { isError: true } });
    expect(fs.existsSync(questionFile)).toBe(false);
  });

  it('refuses what is not its protocol: bad JSON, unknown methods and tools, wrong arguments', async () => {
    const answers = await exchange([
      '{not json',
      '[1, 2]',
      { method: 'resources/list', jsonrpc: '2.0', id: 5 },
      { method: 'tools/call', jsonrpc: '2.0', id: 6, params: { name: 'rm', arguments: {} } },
      { method: 'tools/call', jsonrpc: '2.0', id: 7, params: { name: 'ask', arguments: { question: 42 } } },
      { method: 'ping', jsonrpc: '2.0', id: 8 },
    ]);
    expect(answers.map((a) => [a.id, (a.error as { code?: number } | undefined)?.code ?? 'ok'])).toEqual([
      [null, -32700],
      [null, -32600],
      [5, -32601],
      [6, -32602],
      [7, -32602],
      [8, 'ok'],
    ]);
    expect(fs.existsSync(questionFile)).toBe(false);
  });

  it('refuses a line over its limit without holding it, and goes on', async () => {
    const answers = await exchange(['x'.repeat(2 * 1024 * 1024), { method: 'ping', jsonrpc: '2.0', id: 9 }]);
    expect(answers.map((a) => a.id)).toEqual([null, 9]);
    expect(answers[0]).toMatchObject({ error: { code: -32600 } });
  });
});
