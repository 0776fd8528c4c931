// What the fake agent CLIs (fake-codex.mjs, fake-gemini.mjs, fake-opencode.mjs) share: the
// record a test reads back, stdin, JSONL output and waiting to be killed. Each fake parses its
// argv the way its real CLI does (see SOURCES.md); this file knows nothing of any CLI.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Every agent credential variable a run could carry: a fake records which ones reached it. */
const CREDENTIAL_ENV = [
  'CLAUDE_CODE_OAUTH_TOKEN',
  'ANTHROPIC_API_KEY',
  'OPENAI_API_KEY',
  'CODEX_API_KEY',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GOOGLE_GENERATIVE_AI_API_KEY',
  'OPENCODE_API_KEY',
  'OPENROUTER_API_KEY',
];

export function fail(message, code) {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

export function readStdin() {
  return process.stdin.isTTY ? '' : fs.readFileSync(0, 'utf8');
}

/** FAKE_AGENT_RECORD=<file>: what the CLI was given, for the test to check. */
export function record(facts) {
  const file = process.env.FAKE_AGENT_RECORD;
  if (!file) return;
  const credentials = Object.fromEntries(CREDENTIAL_ENV.filter((n) => process.env[n] !== undefined).map((n) => [n, process.env[n]]));
  fs.writeFileSync(
    file,
    JSON.stringify({
      ...facts,
      argv: process.argv.slice(2),
      cwd: process.cwd(),
      credentials,
      hasCallbackToken: 'CALLBACK_TOKEN' in process.env,
      giteaToken: process.env.GITEA_TOKEN ?? null,
    }),
  );
}

/**
 * `.fake-agent.json` of the repository (the working directory): {"modeByIssue": {"<ISSUE_NUMBER>":
 * "<mode>"}}, so one server's runs can behave differently per issue; FAKE_AGENT_MODE wins.
 */
function settings() {
  try {
    return JSON.parse(fs.readFileSync(path.join(process.cwd(), '.fake-agent.json'), 'utf8'));
  } catch {
    return {};
  }
}

export const mode = () => process.env.FAKE_AGENT_MODE ?? settings().modeByIssue?.[process.env.ISSUE_NUMBER ?? ''] ?? 'success';

export const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Until a signal ends the process (the default SIGTERM handler does). */
export function hang() {
  setInterval(() => {}, 1_000);
  return new Promise(() => {});
}

/** The question of mode `ask`: `.fake-agent.json`'s `question`, else a default. */
export const question = () => settings().question ?? 'Which database should the service use?';

/**
 * What the model's shell tool does in mode `ask`: runs `baton ask "<text>"` (found on PATH, where
 * the runner puts it); whether it was taken, and what it printed.
 */
export function askBaton(text) {
  const run = spawnSync('baton', ['ask', text], { encoding: 'utf8' });
  const output = `${run.stdout ?? ''}${run.stderr ?? ''}${run.error ? String(run.error) : ''}`.trim();
  return { ok: run.status === 0, output, command: `baton ask ${JSON.stringify(text)}` };
}

/** The reply in a resumed turn's prompt (`Reply from @who to your question:\n\n<reply>`): its last line. */
export const replyOf = (prompt) =>
  prompt
    .split('\n')
    .filter((l) => l.trim() !== '')
    .at(-1) ?? '';
