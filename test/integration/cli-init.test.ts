import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseCommandFile, STAGES } from '../../src/agent/index.js';
import { loadConfig } from '../../src/server/index.js';
import { runInit } from '../../src/cli/init.js';

let dir: string;
let lines: string[];
const io = () => ({ out: (l: string) => lines.push(l), err: (l: string) => lines.push(`ERR ${l}`) });

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-init-'));
  lines = [];
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('baton init', () => {
  it('writes a command file per stage and baton.yaml, and says so', async () => {
    expect(await runInit([dir], io())).toBe(0);
    for (const stage of STAGES) {
      const text = fs.readFileSync(path.join(dir, '.claude', 'commands', `${stage}.md`), 'utf8');
      const { frontMatter, body } = parseCommandFile(text, stage);
      expect(typeof frontMatter.description, stage).toBe('string');
      expect(typeof frontMatter['allowed-tools'], stage).toBe('string');
      expect(body, stage).toContain('$GITEA_TOKEN');
      expect(body, stage).toContain('$GITEA_URL/api/v1/repos/$GITEA_ORG/$GITEA_REPO');
      expect(lines).toContain(`wrote    .claude/commands/${stage}.md`);
    }
    expect(fs.existsSync(path.join(dir, 'baton.yaml'))).toBe(true);
    expect(lines.at(-2)).toBe(`11 file(s) written, 0 skipped in ${dir}`);
  });

  it('writes prompts that hand the issue on with the pipeline labels', async () => {
    await runInit([dir], io());
    const read = (stage: string) => fs.readFileSync(path.join(dir, '.claude', 'commands', `${stage}.md`), 'utf8');
    expect(read('analyse')).toContain('"labels":["ready-for-architecture"]');
    expect(read('architect')).toContain('"labels":["ready-for-development"]');
    expect(read('test')).toContain('"labels":["ready-for-deployment"]');
    for (const stage of STAGES.filter((s) => s !== 'maintenance' && s !== 'devops')) expect(read(stage), stage).toContain('$ARGUMENTS');
    expect(read('devops')).toContain('Deploy to $ARGUMENTS');
  });

  it('writes a baton.yaml the config loader accepts', async () => {
    await runInit([dir], { ...io(), env: {} });
    const { config } = loadConfig({ BATON_CONFIG: path.join(dir, 'baton.yaml') }, dir);
    expect(config.workspaceProvider).toBe('local');
    expect(config.queue.concurrency).toBe(2);
  });

  it('writes the provider serve would infer and the public URL connect needs, from the environment', async () => {
    const env = { CODER_URL: 'https://coder.example.com', CODER_TOKEN: 'coder-session-token', PUBLIC_URL: 'https://baton.example.com' };
    expect(await runInit([dir], { ...io(), env })).toBe(0);
    const written = fs.readFileSync(path.join(dir, 'baton.yaml'), 'utf8');
    expect(written).toMatch(/^workspaceProvider: coder$/m);
    expect(written).toMatch(/^publicUrl: "https:\/\/baton\.example\.com"$/m);
    // No secret is written, only where to give it.
    expect(written).not.toContain('coder-session-token');
    // The file alone, without the environment, says the same.
    const { config } = loadConfig(
      {
        BATON_CONFIG: path.join(dir, 'baton.yaml'),
        CODER_TOKEN: 'coder-session-token',
        CODER_TEMPLATE_ID: 'tpl',
        CALLBACK_URL: 'https://baton.example.com',
      },
      dir,
    );
    expect(config.workspaceProvider).toBe('coder');
    expect(config.publicUrl).toBe('https://baton.example.com');
  });

  it('keeps existing files unless --force is given', async () => {
    const mine = path.join(dir, '.claude', 'commands', 'develop.md');
    fs.mkdirSync(path.dirname(mine), { recursive: true });
    fs.writeFileSync(mine, 'our own develop prompt\n');

    expect(await runInit([dir], io())).toBe(0);
    expect(fs.readFileSync(mine, 'utf8')).toBe('our own develop prompt\n');
    expect(lines).toContain('skipped  .claude/commands/develop.md (exists; use --force to overwrite)');
    expect(lines).toContain(`10 file(s) written, 1 skipped in ${dir}`);

    lines = [];
    expect(await runInit([dir, '--force'], io())).toBe(0);
    expect(fs.readFileSync(mine, 'utf8')).not.toBe('our own develop prompt\n');
    expect(lines).toContain('replaced .claude/commands/develop.md');
  });

  it('defaults to the current directory', async () => {
    expect(await runInit([], { ...io(), cwd: dir })).toBe(0);
    expect(fs.existsSync(path.join(dir, '.claude', 'commands', 'analyse.md'))).toBe(true);
  });

  it('writes the prompts for the forge it is told, or the one forge the environment configures', async () => {
    const analyse = () => fs.readFileSync(path.join(dir, '.claude', 'commands', 'analyse.md'), 'utf8');
    expect(await runInit([dir, '--forge', 'gitlab'], io())).toBe(0);
    expect(analyse()).toContain('"$CI_API_V4_URL/projects/${CI_PROJECT_PATH//\\//%2F}/issues/$ARGUMENTS/notes"');
    expect(analyse()).not.toContain('GITEA');
    expect(lines).toContain("The prompts call gitlab's API (--forge).");

    expect(await runInit([dir, '--force'], { ...io(), env: { GITHUB_URL: 'https://github.com' } })).toBe(0);
    expect(analyse()).toContain('"$GITHUB_API_URL/repos/$GITHUB_REPOSITORY/issues/$ARGUMENTS/comments"');

    // Two forges configured: Gitea's prompts, as ever.
    expect(await runInit([dir, '--force'], { ...io(), env: { GITHUB_URL: 'https://github.com', GITLAB_URL: 'https://gl.example' } })).toBe(
      0,
    );
    expect(analyse()).toContain('$GITEA_URL/api/v1/repos/$GITEA_ORG/$GITEA_REPO');

    // `any`: baton's steps kept, each run fills them for its forge.
    expect(await runInit([dir, '--force', '--forge', 'any'], io())).toBe(0);
    expect(analyse()).toContain('{{forge.comment $ARGUMENTS /tmp/analysis.md}}');

    expect(await runInit([dir, '--forge', 'bitbucket'], io())).toBe(2);
    expect(lines.at(-1)).toBe('ERR baton init: --forge must be one of gitea, github, gitlab, any, got "bitbucket"');
  });

  it('rejects unknown options and a file as target', async () => {
    expect(await runInit(['--frobnicate'], io())).toBe(2);
    expect(lines[0]).toContain('baton init: unknown option --frobnicate\nusage: baton init [dir] [--force]');
    const file = path.join(dir, 'file.txt');
    fs.writeFileSync(file, 'x');
    expect(await runInit([file], io())).toBe(2);
    expect(lines.at(-1)).toBe(`ERR baton init: ${file} exists and is not a directory`);
  });
});
