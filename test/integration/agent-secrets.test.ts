import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatRunnerSecrets, parseRunnerSecrets, readRunnerSecrets, SecretsError } from '../../src/runner-contract/index.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-secrets-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const write = (name: string, text: string, mode = 0o600) => {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text, { mode });
  fs.chmodSync(file, mode);
  return file;
};

describe('runner secrets', () => {
  it('reads a 0600 file, deletes it, and removes the pointer from the environment', () => {
    const file = write(
      'secrets',
      '# from the template\nCALLBACK_TOKEN=cb-1\n\nGITEA_TOKEN= forge-1 \r\nCLAUDE_CODE_OAUTH_TOKEN=oauth=with=equals\n',
    );
    const env: NodeJS.ProcessEnv = { BATON_SECRETS_FILE: file, PATH: '/usr/bin' };
    expect(readRunnerSecrets(env)).toEqual({
      secrets: { CALLBACK_TOKEN: 'cb-1', GITEA_TOKEN: 'forge-1', CLAUDE_CODE_OAUTH_TOKEN: 'oauth=with=equals' },
      warnings: [],
    });
    expect(fs.existsSync(file)).toBe(false);
    expect(env).toEqual({ PATH: '/usr/bin' });
  });

  it('reads an inherited descriptor and closes it, so nothing started later can read it again', () => {
    const file = write('fd', formatRunnerSecrets({ CALLBACK_TOKEN: 'cb-2' }));
    const fd = fs.openSync(file, 'r');
    fs.rmSync(file);
    const env: NodeJS.ProcessEnv = { BATON_SECRETS_FD: String(fd) };
    expect(readRunnerSecrets(env).secrets).toEqual({ CALLBACK_TOKEN: 'cb-2' });
    expect(() => fs.fstatSync(fd)).toThrow(/EBADF/);
    expect(env).toEqual({});
  });

  it('refuses a file others can read, and deletes it all the same', () => {
    const file = write('open', 'CALLBACK_TOKEN=cb-3\n', 0o644);
    expect(() => readRunnerSecrets({ BATON_SECRETS_FILE: file })).toThrow(
      new SecretsError(`BATON_SECRETS_FILE ${file} can be read by others (mode 0644); create it with mode 0600`),
    );
    expect(fs.existsSync(file)).toBe(false);
  });

  it('names a bad line by its number and name, never by its value', () => {
    expect(() => parseRunnerSecrets('CALLBACK_TOKEN=x\nDATABASE_URL=postgres://u:pw@db\n', 'BATON_SECRETS_FD 3')).toThrow(
      'BATON_SECRETS_FD 3 line 2: expected NAME=value with NAME one of CALLBACK_TOKEN, GITEA_TOKEN, CLAUDE_CODE_OAUTH_TOKEN, CODEX_API_KEY, GEMINI_API_KEY, OPENCODE_API_KEY, got "DATABASE_URL"',
    );
    expect(() => parseRunnerSecrets('just-a-token-value\n', 'f')).toThrow(
      'f line 1: expected NAME=value with NAME one of CALLBACK_TOKEN, GITEA_TOKEN, CLAUDE_CODE_OAUTH_TOKEN, CODEX_API_KEY, GEMINI_API_KEY, OPENCODE_API_KEY, got a line without a known name',
    );
    expect(() => readRunnerSecrets({ BATON_SECRETS_FD: '1' })).toThrow(
      'BATON_SECRETS_FD must be an inherited descriptor number >= 3, got "1"',
    );
    expect(() => readRunnerSecrets({ BATON_SECRETS_FILE: path.join(dir, 'missing') })).toThrow(
      /BATON_SECRETS_FILE .*missing cannot be read \(ENOENT\)/,
    );
  });

  it('still takes secrets from the environment, with a warning, and takes them out of it', () => {
    const env: NodeJS.ProcessEnv = { CALLBACK_TOKEN: 'cb-4', GITEA_TOKEN: 'forge-4', TASK_TYPE: 'develop' };
    expect(readRunnerSecrets(env)).toEqual({
      secrets: { CALLBACK_TOKEN: 'cb-4', GITEA_TOKEN: 'forge-4' },
      warnings: [
        'CALLBACK_TOKEN, GITEA_TOKEN came from the environment, where other processes of the workspace can read them; pass them in a 0600 file (BATON_SECRETS_FILE) instead',
      ],
    });
    expect(env).toEqual({ TASK_TYPE: 'develop' });
  });

  it('refuses a multi-line value when writing', () => {
    expect(() => formatRunnerSecrets({ GITEA_TOKEN: 'a\nCALLBACK_TOKEN=b' })).toThrow('GITEA_TOKEN must be a single line');
  });
});
