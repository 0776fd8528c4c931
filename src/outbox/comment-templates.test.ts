import { describe, expect, it } from 'vitest';
import { COMMENT_PLACEHOLDERS, DEFAULT_COMMENT_TEMPLATES, parseCommentTemplates, renderCommentTemplate } from './comment-templates.js';

describe('parseCommentTemplates', () => {
  it('gives the defaults when baton.yaml has no comments section', () => {
    expect(parseCommentTemplates(undefined)).toEqual({ templates: DEFAULT_COMMENT_TEMPLATES, problems: [] });
    expect(parseCommentTemplates(null).problems).toEqual([]);
  });

  it('overrides only the templates given', () => {
    const { templates, problems } = parseCommentTemplates({ succeeded: 'Done: {{summary}}', queued: '' });
    expect(problems).toEqual([]);
    expect(templates.succeeded).toBe('Done: {{summary}}');
    expect(templates.queued).toBe('');
    expect(templates.failed).toBe(DEFAULT_COMMENT_TEMPLATES.failed);
  });

  it('names an unknown template and lists the known ones', () => {
    const { problems } = parseCommentTemplates({ finished: 'x' });
    expect(problems).toEqual([
      'baton.yaml: unknown key "comments.finished" (known keys: queued, held, started, succeeded, failed, timed_out, cancelled, dead)',
    ]);
  });

  it('names a template whose value is not a string', () => {
    const { problems, templates } = parseCommentTemplates({ started: 42, failed: ['a'] });
    expect(problems).toEqual([
      'comments.started must be a string (Markdown with {{placeholders}}), got "42"',
      `comments.failed must be a string (Markdown with {{placeholders}}), got "${JSON.stringify(['a'])}"`,
    ]);
    expect(templates.started).toBe(DEFAULT_COMMENT_TEMPLATES.started);
  });

  it('refuses to switch off a final comment', () => {
    expect(parseCommentTemplates({ dead: '  ' }).problems).toEqual([
      'comments.dead must not be empty: baton always posts a final comment, got "  "',
    ]);
  });

  it('names unknown placeholders', () => {
    const { problems } = parseCommentTemplates({ failed: 'oops {{reason}} {{ stage }}' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^comments\.failed uses unknown placeholder \{\{reason\}\} \(known: \{\{stage\}\}/);
  });

  it('rejects a section that is not a mapping', () => {
    expect(parseCommentTemplates('hello').problems[0]).toBe('comments must be a mapping of settings, got "hello"');
    expect(parseCommentTemplates(['a']).problems).toHaveLength(1);
  });

  it('only uses known placeholders in its defaults', () => {
    expect(parseCommentTemplates({ ...DEFAULT_COMMENT_TEMPLATES }).problems).toEqual([]);
  });
});

describe('renderCommentTemplate', () => {
  const values = Object.fromEntries(COMMENT_PLACEHOLDERS.map((p) => [p, ''])) as Record<(typeof COMMENT_PLACEHOLDERS)[number], string>;

  it('fills placeholders, spaces inside braces allowed', () => {
    expect(renderCommentTemplate('{{stage}} / {{ runId }}', { ...values, stage: 'develop', runId: '7' })).toBe('develop / 7');
  });

  it('leaves no trailing blank lines where a value was empty', () => {
    expect(renderCommentTemplate('head\n\n{{summary}}\n\n', values)).toBe('head');
    expect(renderCommentTemplate('a\n\n{{error}}\n\nb', values)).toBe('a\n\nb');
  });
});
