import fs from 'node:fs';
import { expect, it } from 'vitest';
import { createStreamParser } from '../../src/agents/index.js';
import { describeWithReference } from '../helpers/reference.js';

describeWithReference(
  'claude-code/stream-json-sample-turns.json',
  'stream-json parser on the upstream sample stream (claude-code-action sample-turns.json)',
  (sample) => {
    it('reads its simplified final result and the assistant usage', () => {
      const messages = JSON.parse(fs.readFileSync(sample, 'utf8')) as unknown[];
      const parser = createStreamParser();
      const lines = messages.flatMap((m) => parser.push(JSON.stringify(m)));
      expect(lines.some((l) => l.startsWith('[tool] Read'))).toBe(true);
      // Its result has no subtype/is_error: not a success by the rules.
      expect(parser.result).toMatchObject({ subtype: '(none)', isError: null, costUsd: 0.0347 });
      expect(parser.result?.text).toContain('Successfully removed debug print statement');
      expect(parser.streamedUsage.outputTokens).toBe(75 + 50 + 80 + 60);
    });
  },
);
