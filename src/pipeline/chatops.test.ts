import { describe, expect, it } from 'vitest';
import { chatHelp, commandOf, parseCommand } from './chatops.js';
import { defaultPipeline } from './stages.js';
import type { ForgeEvent } from './types.js';

describe('parseCommand', () => {
  it('reads the commands after the mention, in any case', () => {
    expect(parseCommand('@baton retry', '@baton')).toEqual({ name: 'retry' });
    expect(parseCommand('  @Baton   CANCEL  ', '@baton')).toEqual({ name: 'cancel' });
    expect(parseCommand('@baton: status', '@baton')).toEqual({ name: 'status' });
    expect(parseCommand('@baton help me', '@baton')).toEqual({ name: 'help' });
  });

  it('reads run with its stage and the rest as text, multi-line', () => {
    expect(parseCommand('@baton run Develop keep\nthe flag', '@baton')).toEqual({ name: 'run', stage: 'develop', text: 'keep\nthe flag' });
    expect(parseCommand('@baton run analyse', '@baton')).toEqual({ name: 'run', stage: 'analyse', text: '' });
    expect(parseCommand('@baton run', '@baton')).toEqual({ name: 'unknown', word: 'run' });
  });

  it('treats anything else after the mention as unknown, and the bare mention too', () => {
    expect(parseCommand('@baton deploy now', '@baton')).toEqual({ name: 'unknown', word: 'deploy' });
    expect(parseCommand('@baton', '@baton')).toEqual({ name: 'unknown', word: '' });
  });

  it('is no command when the comment does not start with the mention, or names someone else', () => {
    expect(parseCommand('thanks @baton', '@baton')).toBeNull();
    expect(parseCommand('@batonista retry', '@baton')).toBeNull();
    expect(parseCommand('@ci retry', '@ci')).toEqual({ name: 'retry' });
  });
});

describe('commandOf', () => {
  const event = (kind: ForgeEvent['kind'], action: string, body: string): ForgeEvent => ({
    kind,
    action,
    event: 'issue_comment',
    forge: 'gitea',
    owner: 'acme',
    repo: 'app',
    number: 1,
    sender: 'alice',
    labels: [],
    isPull: kind === 'pr_comment',
    merged: false,
    comment: { id: 5, body, author: 'alice' },
  });

  it('takes new comments on issues and pull requests, never an edit', () => {
    const pipeline = defaultPipeline({ dev: { username: 'claude-dev' }, review: { username: 'claude-review' } });
    expect(commandOf(event('issue_comment', 'created', '@baton retry'), pipeline)).toEqual({ name: 'retry' });
    expect(commandOf(event('pr_comment', 'created', '@baton status'), pipeline)).toEqual({ name: 'status' });
    expect(commandOf(event('issue_comment', 'edited', '@baton retry'), pipeline)).toBeNull();
    expect(commandOf(event('issue_comment', 'created', '@ops retry'), { ...pipeline, mention: '@ops' })).toEqual({ name: 'retry' });
  });

  it('lists the stages in the help', () => {
    expect(chatHelp(defaultPipeline({ dev: { username: 'claude-dev' }, review: { username: 'claude-review' } }))).toContain('`develop`');
  });
});
