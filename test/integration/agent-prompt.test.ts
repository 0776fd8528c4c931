import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommandFileError, resolvePrompt } from '../../src/agent/index.js';

let repo: string;
beforeEach(() => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-prompt-'));
  fs.mkdirSync(path.join(repo, '.claude', 'commands'), { recursive: true });
});
afterEach(() => fs.rmSync(repo, { recursive: true, force: true }));

const write = (stage: string, text: string) => fs.writeFileSync(path.join(repo, '.claude', 'commands', `${stage}.md`), text);

describe('command files', () => {
  it('strips front matter (CRLF too) and substitutes every $ARGUMENTS', async () => {
    write('develop', '---\r\ndescription: Build it\r\nallowed-tools: Bash\r\n---\r\nFix #$ARGUMENTS.\r\nThen comment on $ARGUMENTS.\r\n');
    const resolved = await resolvePrompt({ repoDir: repo, stage: 'develop', args: '12' });
    expect(resolved).toMatchObject({
      prompt: 'Fix #12.\nThen comment on 12.',
      source: 'repository',
      frontMatter: { description: 'Build it' },
    });
  });

  it('uses files without front matter as they are', async () => {
    write('analyse', 'Look at $ARGUMENTS\n---\nnot front matter');
    expect((await resolvePrompt({ repoDir: repo, stage: 'analyse', args: '3' })).prompt).toBe('Look at 3\n---\nnot front matter');
  });

  it.each([
    ['unterminated front matter', '---\ndescription: x\nbody', 'never closed'],
    ['invalid YAML', '---\ndescription: [unclosed\n---\nbody', 'not valid YAML'],
    ['front matter that is not a mapping', '---\n- a\n- b\n---\nbody', 'must be a YAML mapping'],
    ['no prompt text', '---\ndescription: x\n---\n\n  \n', 'has no prompt text'],
  ])('rejects %s with a clear reason', async (_case, text, reason) => {
    write('develop', text);
    const error = await resolvePrompt({ repoDir: repo, stage: 'develop', args: '1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandFileError);
    expect((error as Error).message).toContain('.claude/commands/develop.md');
    expect((error as Error).message).toContain(reason);
  });

  it('rejects stage names that could escape the commands folder', async () => {
    await expect(resolvePrompt({ repoDir: repo, stage: '../../etc/passwd', args: '' })).rejects.toThrow('is not valid');
  });
});
