import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { createFakeCoder } from '../fakes/coder/index.js';
import { runBaton, startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { until } from '../helpers/until.js';

/** `baton config check` and `baton serve` through the built bin: the same pass, so the same verdict. */
describe('baton config check and baton serve', () => {
  let cwd: string;
  let server: ServeHandle | undefined;

  beforeEach(() => {
    cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-config-e2e-'));
  });
  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    fs.rmSync(cwd, { recursive: true, force: true });
  });

  const problemLines = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('  - '));

  /** Both commands on the same configuration: both must refuse it with the same lines, before serve listens. */
  async function bothRefuse(env: Record<string, string>): Promise<string[]> {
    const check = await runBaton(['config', 'check'], { cwd, env });
    const serve = await runBaton(['serve'], { cwd, env: { PORT: '0', ...env } });
    expect(check.code).toBe(1);
    expect(serve.code).toBe(1);
    expect(problemLines(check.stderr).length).toBeGreaterThan(0);
    expect(problemLines(serve.stderr)).toEqual(problemLines(check.stderr));
    expect(check.stdout).toBe('');
    expect(fs.existsSync(path.join(cwd, 'data'))).toBe(false);
    return problemLines(check.stderr);
  }

  it('refuse the same bad coder section', async () => {
    fs.writeFileSync(path.join(cwd, 'baton.yaml'), 'coder:\n  staleAfterMinutes: soon\n  templateVersoinId: x\n');
    const lines = await bothRefuse({
      WORKSPACE_PROVIDER: 'coder',
      CODER_URL: 'https://coder.example',
      CALLBACK_URL: 'https://baton.example',
    });
    expect(lines).toEqual([
      expect.stringMatching(
        /^ {2}- baton\.yaml: unknown key "coder\.templateVersoinId" \(known keys: url, tokenFile, templateId, templateVersionId, /,
      ),
      '  - coder.staleAfterMinutes must be a number >= 1, got "soon"',
      '  - CODER_TOKEN (or CODER_TOKEN_FILE, or coder.tokenFile) is required when WORKSPACE_PROVIDER=coder (a Coder session token)',
      "  - CODER_TEMPLATE_ID (or coder.templateVersionId) is required when WORKSPACE_PROVIDER=coder (the template of baton's workspaces)",
    ]);
  });

  it('refuse a secret in baton.yaml, naming the variable to use and never the secret', async () => {
    fs.writeFileSync(path.join(cwd, 'baton.yaml'), 'bots:\n  dev:\n    token: in-the-yaml-0123\n');
    const lines = await bothRefuse({});
    expect(lines).toEqual([
      '  - bots.dev.token must not be written in baton.yaml: it is a secret. Set GITEA_DEV_TOKEN, or GITEA_DEV_TOKEN_FILE (or bots.dev.tokenFile) to a file holding it.',
    ]);
    expect(lines.join()).not.toContain('in-the-yaml-0123');
  });

  it('refuse the original orchestrator environment without CALLBACK_URL: it would run Coder workspaces that cannot call back', async () => {
    const lines = await bothRefuse({ CODER_URL: 'https://coder.example', CODER_TOKEN: 'coder-token-1', CODER_TEMPLATE_ID: 'tpl' });
    expect(lines).toEqual([expect.stringMatching(/^ {2}- CALLBACK_URL is required when WORKSPACE_PROVIDER=coder/)]);
  });

  it('config check reads secrets from *_FILE, prints keys as baton.yaml spells them and masks every secret', async () => {
    const tokenFile = path.join(cwd, 'dev-token');
    fs.writeFileSync(tokenFile, 'dev-token-from-file\n', { mode: 0o600 });
    fs.writeFileSync(path.join(cwd, 'baton.yaml'), 'queue:\n  perRepository: 1\n');
    const result = await runBaton(['config', 'check'], {
      cwd,
      env: {
        GITEA_URL: 'https://git.example',
        GITEA_DEV_TOKEN_FILE: tokenFile,
        GITEA_REVIEW_TOKEN: 'review-token-from-env',
        DATABASE_URL: 'postgres://baton:database-password@db/baton',
        BATON_DATA_DIR: './state',
      },
    });
    expect(result.code).toBe(0);
    for (const secret of ['dev-token-from-file', 'review-token-from-env', 'database-password']) expect(result.stdout).not.toContain(secret);
    expect(YAML.parse(result.stdout)).toMatchObject({
      dataDir: path.join(fs.realpathSync(cwd), 'state'),
      database: { url: 'postgres://baton:********@db/baton' },
      queue: { perRepository: 1 },
      bots: { dev: { token: '********' } },
    });
    expect(result.stdout).toMatch(/^ {2}perRepository: 1 # QUEUE_PER_REPOSITORY_CONCURRENCY, from baton\.yaml$/m);
    expect(result.stdout).toContain(`GITEA_DEV_TOKEN or GITEA_DEV_TOKEN_FILE, read from ${tokenFile} (GITEA_DEV_TOKEN_FILE)`);
  });

  it('config check names an unreadable secret file by variable and path', async () => {
    const missing = path.join(cwd, 'nowhere', 'token');
    const result = await runBaton(['config', 'check'], { cwd, env: { WEBHOOK_SECRET_FILE: missing } });
    expect(result.code).toBe(1);
    expect(problemLines(result.stderr)).toEqual([`  - WEBHOOK_SECRET_FILE points at ${missing}, which cannot be read (ENOENT)`]);
  });

  it('serve keeps the default database in BATON_DATA_DIR and warns that without GITEA_URL no comment is posted', async () => {
    // Runs are sandboxed as nobody when this suite runs as root: it must reach ./state/workspaces.
    fs.chmodSync(cwd, 0o711);
    server = await startServe({ BATON_DATA_DIR: './state', HOST: '127.0.0.1' }, cwd);
    const url = server.url;
    await until(async () => (await fetch(`${url}/ready`).catch(() => null))?.status === 200, 'baton serve to be ready');
    expect(fs.existsSync(path.join(cwd, 'state', 'baton.db'))).toBe(true);
    expect(fs.existsSync(path.join(cwd, 'data'))).toBe(false);
    expect(server.output()).toMatch(/"level":40,.*"msg":"GITEA_URL is not set: baton will never post a status comment/);
  });

  it('serve with the original orchestrator environment uses Coder and says so at start', async () => {
    const coder = await createFakeCoder({ stepMs: 2 });
    try {
      server = await startServe(
        {
          CODER_URL: coder.url,
          CODER_TOKEN: coder.token,
          CODER_TEMPLATE_ID: coder.template.id,
          CALLBACK_URL: 'http://127.0.0.1:1',
          HOST: '127.0.0.1',
        },
        cwd,
      );
      const url = server.url;
      // The first admin token (written to a file: no terminal here) sees which checks ran.
      const tokenFile = path.join(cwd, 'data/first-admin-token');
      await until(() => fs.existsSync(tokenFile), 'the first admin token');
      const headers = { authorization: `Bearer ${fs.readFileSync(tokenFile, 'utf8').trim()}` };
      const ready = await until(async () => {
        const res = await fetch(`${url}/ready`, { headers }).catch(() => null);
        return res?.status === 200 ? ((await res.json()) as { checks: { name: string }[] }) : null;
      }, 'baton serve to be ready');
      expect(ready.checks.map((c) => c.name)).toContain('provider coder');
      expect(server.output()).toMatch(
        /"msg":"WORKSPACE_PROVIDER is not set and CODER_URL and CODER_TOKEN are set: using the Coder provider/,
      );
      expect(server.output()).not.toContain(coder.token);
    } finally {
      await server?.stop('SIGKILL');
      server = undefined;
      await coder.close();
    }
  });
});
