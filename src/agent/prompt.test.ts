import { describe, expect, it } from 'vitest';
import { parseCommandFile, promptArguments } from './prompt.js';

describe('command files', () => {
  it('parses front matter of the built-in format', () => {
    expect(parseCommandFile('---\ndescription: d\nallowed-tools: Bash(curl:*), Read\n---\nx', 'f').frontMatter).toEqual({
      description: 'd',
      'allowed-tools': 'Bash(curl:*), Read',
    });
  });

  it('gives devops the deploy environment and other stages the number', () => {
    expect(promptArguments('devops', '5', 'staging')).toBe('staging');
    expect(promptArguments('develop', '5', 'staging')).toBe('5');
    expect(promptArguments('maintenance', undefined, undefined)).toBe('');
  });
});
