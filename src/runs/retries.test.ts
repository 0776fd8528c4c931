import { describe, expect, it } from 'vitest';
import { isTransientFailure } from './retries.js';

describe('failure kinds', () => {
  it('retries what passes and nothing else', () => {
    for (const kind of ['agent_overloaded', 'agent_rate_limited', 'agent_unreachable', 'runner_terminated', 'workspace_lost']) {
      expect(isTransientFailure(kind), kind).toBe(true);
    }
    for (const kind of [
      'agent_error',
      'token_cap',
      'command_file_invalid',
      'no_turns',
      'clone_failed',
      'max_duration',
      null,
      undefined,
      '',
    ]) {
      expect(isTransientFailure(kind), String(kind)).toBe(false);
    }
  });
});
