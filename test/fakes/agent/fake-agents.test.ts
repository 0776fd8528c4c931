import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * The fake Codex, Gemini and OpenCode CLIs answer argv, stdin and resume as the real ones did
 * when run (`@openai/codex` 0.171.0, `@google/gemini-cli` 0.61.0, `opencode-ai` 1.18.33; see
 * SOURCES.md for each observation), so a runner mistake that the real CLI would refuse fails here.
 */
const fake = (name: string) => fileURLToPath(new URL(`./fake-${name}.mjs`, import.meta.url));

let home: string;
let cwd: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-fake-agents-home-'));
  cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-fake-agents-cwd-'));
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(cwd, { recursive: true, force: true });
});

function run(name: string, args: string[], input: string | null, env: Record<string, string> = {}, dir = cwd) {
  const r = spawnSync(process.execPath, [fake(name), ...args], {
    cwd: dir,
    input: input ?? '',
    env: { PATH: process.env.PATH ?? '', HOME: home, ...env },
    encoding: 'utf8',
  });
  const events = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, events };
}

describe('fake codex (codex exec, clap)', () => {
  const base = ['exec', '--json', '--skip-git-repo-check', '--color=never'];

  it('refuses an unknown option, an option it no longer has and a bad value with exit 2, before any event', () => {
    for (const args of [
      [...base, '--bogus', '-'],
      [...base, '--full-auto', '-'],
      [...base, '--sandbox=bogus', '-'],
      [...base, '--model'],
    ]) {
      const r = run('codex', args, 'hi');
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^error: /);
      expect(r.events).toEqual([]);
    }
    expect(run('codex', [...base, '--bogus', '-'], 'hi').stderr).toContain("error: unexpected argument '--bogus' found");
  });

  it("takes exec's options before `resume` and refuses them after it (resume has no --sandbox)", () => {
    const first = run('codex', [...base, '--sandbox=workspace-write', '-'], 'start');
    expect(first.code).toBe(0);
    const thread = first.events[0]!.thread_id as string;
    const again = run('codex', [...base, '--sandbox=workspace-write', 'resume', thread, '-'], 'more');
    expect(again.code, again.stderr).toBe(0);
    expect(again.events[0]).toEqual({ type: 'thread.started', thread_id: thread });
    const after = run('codex', [...base, 'resume', '--sandbox=workspace-write', thread, '-'], 'more');
    expect(after.code).toBe(2);
    expect(after.stderr).toContain("error: unexpected argument '--sandbox' found");
    expect(after.stderr).toContain('Usage: codex exec resume [OPTIONS] [SESSION_ID] [PROMPT]');
  });

  it('keeps the session under ~/.codex/sessions and fails a resume of a thread it has no rollout for', () => {
    const first = run('codex', [...base, '-'], 'start');
    const thread = first.events[0]!.thread_id as string;
    const files = fs.readdirSync(path.join(home, '.codex', 'sessions'), { recursive: true }).map(String);
    expect(files.some((f) => f.endsWith(`-${thread}.jsonl`) && path.basename(f).startsWith('rollout-'))).toBe(true);
    const missing = run('codex', [...base, 'resume', '0199a213-81c0-7800-8aa1-bbab2a035a53', '-'], 'more');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no rollout found for thread id 0199a213-81c0-7800-8aa1-bbab2a035a53');
    expect(missing.events).toEqual([]);
  });

  it('reads `-` from stdin (empty stdin: exit 1), and appends piped stdin to a prompt argument', () => {
    expect(run('codex', [...base, '-'], '').stderr).toContain('No prompt provided via stdin.');
    const record = path.join(cwd, 'record.json');
    run('codex', [...base, 'hello'], 'extra text\n', { FAKE_AGENT_RECORD: record });
    expect(JSON.parse(fs.readFileSync(record, 'utf8')).prompt).toBe('hello\n\n<stdin>\nextra text\n</stdin>');
  });
});

describe('fake gemini (yargs)', () => {
  const key = { GEMINI_API_KEY: 'AIza-fake' };

  it('prints the message, then the usage, and exits 1 on an unknown option or a bad choice', () => {
    const unknown = run('gemini', ['--output-format=stream-json', '--bogus'], 'hi', key);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.split('\n')[0]).toBe('Unknown argument: bogus');
    expect(unknown.stderr).toContain('Usage: gemini [options] [command]');
    const choice = run('gemini', ['--output-format=bogus'], 'hi', key);
    expect(choice.code).toBe(1);
    expect(choice.stderr).toMatch(/^Invalid values:\n {2}Argument: output-format, Given: "bogus", Choices: "text", "json", "stream-json"/);
  });

  it('without a key: exit 41 and no stream', () => {
    const r = run('gemini', ['--output-format=stream-json', '--skip-trust'], 'hi');
    expect(r.code).toBe(41);
    expect(r.stderr).toContain('GEMINI_API_KEY');
    expect(r.events).toEqual([]);
  });

  it("resumes a session of this directory's project, and refuses an unknown one with exit 42", () => {
    const args = ['--output-format=stream-json', '--skip-trust', '--approval-mode=yolo'];
    const first = run('gemini', args, 'start', key);
    expect(first.events[0]).toMatchObject({ type: 'init', model: 'auto' });
    const session = first.events[0]!.session_id as string;
    const projects = JSON.parse(fs.readFileSync(path.join(home, '.gemini', 'projects.json'), 'utf8')) as { projects: object };
    expect(projects.projects).toEqual({
      [cwd]: path
        .basename(cwd)
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-'),
    });
    const again = run('gemini', [...args, `--resume=${session}`], 'more', key);
    expect(again.code, again.stderr).toBe(0);
    expect(again.events[0]).toMatchObject({ type: 'init', session_id: session });
    const missing = run('gemini', [...args, '--resume=8c8fcbe3-8a9d-417b-b3b8-af7758af997b'], 'more', key);
    expect(missing.code).toBe(42);
    expect(missing.stderr).toContain('Error resuming session: Invalid session identifier "8c8fcbe3-8a9d-417b-b3b8-af7758af997b"');
    expect(missing.events).toEqual([]);
  });
});

describe('fake opencode (opencode run, yargs)', () => {
  const base = ['run', '--format=json', '--auto'];

  it("shows only the command's help (no message) and exits 1 on an unknown option or a bad choice", () => {
    for (const args of [
      [...base, '--bogus'],
      ['run', '--format=bogus'],
    ]) {
      const r = run('opencode', args, 'hi');
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr.startsWith('opencode run [message..]')).toBe(true);
      expect(r.stderr).not.toContain('Unknown argument');
      expect(r.events).toEqual([]);
    }
  });

  it('needs a message (stdin or words), resumes its own sessions and refuses an unknown one', () => {
    expect(run('opencode', base, '').stderr).toContain('You must provide a message or a command');
    const first = run('opencode', base, 'start');
    expect(first.code).toBe(0);
    const session = first.events[0]!.sessionID as string;
    expect(session).toMatch(/^ses_[A-Za-z0-9]{26}$/);
    const again = run('opencode', [...base, `--session=${session}`], 'more');
    expect(again.code, again.stderr).toBe(0);
    expect(again.events.every((e) => e.sessionID === session)).toBe(true);
    const missing = run('opencode', [...base, '--session=ses_nope'], 'more');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('Error: Session not found');
    expect(missing.events).toEqual([]);
  });
});
