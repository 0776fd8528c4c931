import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunAgentOptions } from '../../../src/agent/index.js';
import { startCallbackReceiver, type CallbackReceiver } from './callback-receiver.js';
import { createBareRepo } from './git-repos.js';

export const FAKE_CLAUDE = fileURLToPath(new URL('./fake-claude.mjs', import.meta.url));
export const CALLBACK_TOKEN = 'cb-token-0123456789abcdef';
export const GITEA_TOKEN = 'gitea-token-fedcba9876543210';
export const OAUTH_TOKEN = 'sk-ant-oat01-fake-oauth-token-value';

export const DEVELOP_COMMAND = `---
description: Implement the issue
allowed-tools: Bash(git:*), Read, Edit
---
Implement issue #$ARGUMENTS on the develop branch.

Then post a summary on issue $ARGUMENTS.
`;

/** What fake-claude.mjs wrote to FAKE_CLAUDE_RECORD. */
export interface FakeClaudeRecord {
  argv: string[];
  prompt: string;
  promptSource: 'argument' | 'stdin';
  options: Record<string, unknown>;
  permissionMode: string;
  model: string;
  cwd: string;
  hasAnthropicApiKey: boolean;
  hasCallbackToken: boolean;
  oauthToken: string | null;
}

export interface RunnerFixture {
  root: string;
  receiver: CallbackReceiver;
  /** runAgent options for the fake CLI in `mode`, on a fresh bare repository unless `cloneUrl` is given. */
  options(mode: string, overrides?: Partial<RunAgentOptions>): RunAgentOptions & { record: string };
  readRecord(file: string): FakeClaudeRecord;
  close(): Promise<void>;
}

/** A temp directory, a callback receiver, and runAgent options that run the fake Claude Code CLI. */
export async function createRunnerFixture(): Promise<RunnerFixture> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-agent-'));
  const receiver = await startCallbackReceiver({ token: CALLBACK_TOKEN });
  const unique = () => Math.random().toString(36).slice(2, 10);
  return {
    root,
    receiver,
    options(mode, overrides = {}) {
      const record = path.join(root, `record-${unique()}.json`);
      const cloneUrl =
        overrides.cloneUrl ?? createBareRepo(root, `app-${unique()}`, { develop: { '.claude/commands/develop.md': DEVELOP_COMMAND } });
      return {
        stage: 'develop',
        issueNumber: '42',
        cloneUrl,
        repoName: 'app',
        workdir: fs.mkdtempSync(path.join(root, 'ws-')),
        callbackUrl: receiver.callbackUrl,
        callbackToken: CALLBACK_TOKEN,
        forgeToken: GITEA_TOKEN,
        claudeOauthToken: OAUTH_TOKEN,
        env: {
          PATH: process.env.PATH,
          HOME: root,
          ANTHROPIC_API_KEY: 'sk-ant-api-must-not-reach-the-agent',
          CALLBACK_TOKEN,
          GITEA_TOKEN,
          ISSUE_NUMBER: '42',
          FAKE_CLAUDE_MODE: mode,
          FAKE_CLAUDE_RECORD: record,
        },
        // The Claude Code executable only: the runner adds the arguments, as it does for `claude`.
        agentCommand: [process.execPath, FAKE_CLAUDE],
        callbackRetryBaseMs: 10,
        progressIntervalMs: 50,
        killGraceMs: 500,
        ...overrides,
        record,
      };
    },
    readRecord: (file) => JSON.parse(fs.readFileSync(file, 'utf8')) as FakeClaudeRecord,
    async close() {
      await receiver.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
