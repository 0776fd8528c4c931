import type { Readable, Writable } from 'node:stream';
import { parseCommand, type CommandSpec } from './args.js';
import { QUESTION_RECORDED, QuestionError, recordQuestion } from './ask.js';

/**
 * `baton mcp`: a Model Context Protocol server on stdin/stdout with one tool, `ask`, which does
 * exactly what `baton ask` does. The runner registers it for Claude Code (`--mcp-config`, as
 * server `baton`, so the tool is `mcp__baton__ask`); the agent may use either.
 *
 * The protocol is JSON-RPC 2.0, one message per line (MCP's stdio transport: "Messages are
 * delimited by newlines, and MUST NOT contain embedded newlines"; nothing but MCP messages on
 * stdout), https://modelcontextprotocol.io/specification/2025-11-25/basic/transports. Written by
 * hand rather than with @modelcontextprotocol/sdk: a server of one tool needs `initialize`,
 * `ping`, `tools/list` and `tools/call`, and the SDK would bring express, an OAuth stack and a
 * dozen other packages into every run. What Claude Code 2.1.197 sends, observed: `initialize`
 * (id 0, protocolVersion "2025-11-25", capabilities {roots, elicitation}), the
 * `notifications/initialized` notification, then `tools/list`.
 */

export const MCP = {
  command: 'baton mcp',
  positionals: [],
  summary:
    'Inside a run: a Model Context Protocol server (stdio) for the agent, with one tool, "ask", that does what ' +
    '`baton ask` does. baton registers it for Claude Code itself; there is nothing to configure.',
  options: {},
} as const satisfies CommandSpec;

/** The versions of the protocol this server speaks; the newest first (the answer to any other). */
const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
/** A longer line is no message of a client this server knows; it is refused, not buffered. */
const MAX_LINE_BYTES = 1024 * 1024;

const ASK_TOOL = {
  name: 'ask',
  title: 'Ask the people on the issue',
  description:
    'Asks the people on the issue a question you cannot answer from the repository or the issue. After calling ' +
    'it, end your turn: baton posts the question on the issue, keeps this session, and resumes it with the ' +
    'reply as your next prompt (hours later, perhaps). Commit and push your work before asking.',
  inputSchema: {
    type: 'object',
    properties: {
      question: { type: 'string', description: 'the question, as the people on the issue should read it' },
      for: { type: 'string', description: 'whom the question is for (a login), named in the comment' },
    },
    required: ['question'],
    additionalProperties: false,
  },
};

type Id = string | number | null;
interface Message {
  jsonrpc?: unknown;
  id?: Id;
  method?: unknown;
  params?: Record<string, unknown>;
}

const ERROR = { parse: -32700, invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602 } as const;

/** The answer to one message; null for a notification (or a response), which gets none. */
export function answerMessage(message: unknown, env: NodeJS.ProcessEnv, version: string): object | null {
  if (!message || typeof message !== 'object' || Array.isArray(message)) {
    return { jsonrpc: '2.0', id: null, error: { code: ERROR.invalidRequest, message: 'a message is one JSON-RPC object' } };
  }
  const { id, method, params } = message as Message;
  if (id === undefined || typeof method !== 'string') return null;
  const result = (value: object) => ({ jsonrpc: '2.0', id, result: value });
  const error = (code: number, text: string) => ({ jsonrpc: '2.0', id, error: { code, message: text } });
  switch (method) {
    case 'initialize': {
      const asked = params?.protocolVersion;
      return result({
        protocolVersion: typeof asked === 'string' && PROTOCOL_VERSIONS.includes(asked) ? asked : PROTOCOL_VERSIONS[0],
        capabilities: { tools: {} },
        serverInfo: { name: 'baton', version },
      });
    }
    case 'ping':
      return result({});
    case 'tools/list':
      return result({ tools: [ASK_TOOL] });
    case 'tools/call': {
      if (params?.name !== ASK_TOOL.name) return error(ERROR.invalidParams, `unknown tool: ${String(params?.name).slice(0, 100)}`);
      const args = (params.arguments ?? {}) as Record<string, unknown>;
      if (typeof args.question !== 'string' || (args.for !== undefined && typeof args.for !== 'string')) {
        return error(ERROR.invalidParams, 'ask takes {"question": string, "for"?: string}');
      }
      try {
        recordQuestion(env, args.question, args.for as string | undefined);
        return result({ content: [{ type: 'text', text: QUESTION_RECORDED }] });
      } catch (err) {
        // A tool that could not do its work says so in its result, for the agent to read (MCP "isError").
        if (err instanceof QuestionError) return result({ content: [{ type: 'text', text: err.message }], isError: true });
        throw err;
      }
    }
    default:
      return error(ERROR.methodNotFound, `method not found: ${method.slice(0, 100)}`);
  }
}

/** Serves MCP on `input`/`output` until `input` ends. */
export function serveMcp(input: Readable, output: Writable, env: NodeJS.ProcessEnv, version: string): Promise<void> {
  const send = (value: object) => output.write(`${JSON.stringify(value)}\n`);
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let oversized = false;
  const line = (raw: string) => {
    if (raw.trim() === '') return;
    let message: unknown;
    try {
      message = JSON.parse(raw);
    } catch {
      send({ jsonrpc: '2.0', id: null, error: { code: ERROR.parse, message: 'not JSON' } });
      return;
    }
    const answer = answerMessage(message, env, version);
    if (answer) send(answer);
  };
  const tooLong = () =>
    send({ jsonrpc: '2.0', id: null, error: { code: ERROR.invalidRequest, message: `a message is at most ${MAX_LINE_BYTES} bytes` } });
  return new Promise((resolve, reject) => {
    input.on('data', (chunk: Buffer) => {
      let from = 0;
      for (let at = chunk.indexOf(0x0a); at !== -1; at = chunk.indexOf(0x0a, from)) {
        if (oversized || pendingBytes + (at - from) > MAX_LINE_BYTES) tooLong();
        else line(Buffer.concat([...pending, chunk.subarray(from, at)]).toString('utf8'));
        pending = [];
        pendingBytes = 0;
        oversized = false;
        from = at + 1;
      }
      const rest = chunk.subarray(from);
      pendingBytes += rest.length;
      if (pendingBytes > MAX_LINE_BYTES) {
        oversized = true;
        pending = [];
      } else if (rest.length > 0) pending.push(Buffer.from(rest));
    });
    input.once('end', () => {
      if (oversized) tooLong();
      else if (pending.length > 0) line(Buffer.concat(pending).toString('utf8'));
      resolve();
    });
    input.once('error', reject);
  });
}

/** `baton mcp`: the server on this process's stdin and stdout. */
export async function mcpCommand(argv: string[], env: NodeJS.ProcessEnv, version: string): Promise<number> {
  parseCommand(MCP, argv);
  await serveMcp(process.stdin, process.stdout, env, version);
  return 0;
}
