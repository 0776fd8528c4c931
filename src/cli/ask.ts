import fs from 'node:fs';
import { AGENT_ENV } from '../runner-contract/index.js';
import { parseCommand, UsageError, type CommandSpec } from './args.js';
import type { CommandIo } from './io.js';

/** Longest question kept; the rest is cut (the server keeps as much). */
const MAX_QUESTION_CHARS = 8_000;
const LOGIN = /^@?[\w.-]{1,80}$/;

export const ASK = {
  command: 'baton ask',
  positionals: ['QUESTION'],
  summary:
    'Inside a run: asks the people on the issue a question. When the agent then ends its turn, baton posts the ' +
    'question on the issue, keeps the session and the branch, and frees the workspace; a reply from someone with ' +
    'write access resumes this same session with the reply as its prompt. Without QUESTION it is read from stdin.',
  options: {
    for: { type: 'string', value: 'WHO', description: 'whom the question is for (a login), named in the comment' },
  },
} as const satisfies CommandSpec;

/** What the agent is told once its question is recorded (by `baton ask` and the MCP tool alike). */
export const QUESTION_RECORDED =
  'Question recorded. Now end your turn without doing more: baton posts the question on the issue and ' +
  'resumes this session with the reply as your next prompt. Work not committed and pushed may be lost ' +
  '(baton pushes the current branch for you).';

/** Why a question cannot be recorded, in words for the agent. */
export class QuestionError extends Error {}

/**
 * Records a question where the runner looks once the agent ends (`BATON_QUESTION_FILE`, one JSON
 * line per question): what `baton ask` and the `ask` tool of `baton mcp` both do.
 */
export function recordQuestion(env: NodeJS.ProcessEnv, question: string, forWhom?: string): void {
  const file = env[AGENT_ENV.questionFile];
  if (!file) throw new QuestionError(`baton ask works inside a baton run only (${AGENT_ENV.questionFile} is not set)`);
  const text = question.trim();
  if (text === '') throw new QuestionError('baton ask needs the question');
  if (forWhom !== undefined && !LOGIN.test(forWhom)) {
    throw new QuestionError(`baton ask: "for" must be a login, got ${JSON.stringify(forWhom.slice(0, 80))}`);
  }
  const entry = { text: text.slice(0, MAX_QUESTION_CHARS), ...(forWhom ? { for: forWhom } : {}), at: new Date().toISOString() };
  fs.appendFileSync(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
}

/** `baton ask "<question>"`: records the question where the runner looks once the agent ends. */
export async function askCommand(argv: string[], io: CommandIo, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseCommand(ASK, argv);
  if (!env[AGENT_ENV.questionFile]) {
    io.err(`baton ask works inside a baton run only (${AGENT_ENV.questionFile} is not set)`);
    return 2;
  }
  const text = (positionals[0] ?? (process.stdin.isTTY ? '' : fs.readFileSync(0, 'utf8'))).trim();
  if (text === '') throw new UsageError('baton ask needs the question (an argument, or on stdin)', ASK);
  if (values.for !== undefined && !LOGIN.test(values.for)) {
    throw new UsageError(`baton ask: --for must be a login, got ${JSON.stringify(values.for.slice(0, 80))}`, ASK);
  }
  recordQuestion(env, text, values.for);
  io.out(QUESTION_RECORDED);
  return 0;
}
