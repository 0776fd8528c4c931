import { describe, expect, it } from 'vitest';
import { displayUrl, gitAuthEnv } from './checkout.js';

describe('git credentials', () => {
  it('sends the forge token only to the forge origin, through env rather than files or argv', () => {
    const env = gitAuthEnv('https://gitea.example.com/acme/app.git', 'tok123');
    expect(env).toEqual({
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.https://gitea.example.com/.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from('tok123:x-oauth-basic').toString('base64')}`,
    });
  });

  it('adds nothing for local paths, ssh URLs or a missing token', () => {
    expect(gitAuthEnv('/srv/git/app.git', 'tok')).toEqual({ GIT_TERMINAL_PROMPT: '0' });
    expect(gitAuthEnv('git@gitea.example.com:acme/app.git', 'tok')).toEqual({ GIT_TERMINAL_PROMPT: '0' });
    expect(gitAuthEnv('https://gitea.example.com/acme/app.git', undefined)).toEqual({ GIT_TERMINAL_PROMPT: '0' });
  });

  it('drops user:password from URLs shown to people', () => {
    expect(displayUrl('https://bot:secret@gitea.example.com/acme/app.git')).toBe('https://gitea.example.com/acme/app.git');
    expect(displayUrl('/srv/git/app.git')).toBe('/srv/git/app.git');
  });
});
