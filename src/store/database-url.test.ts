import { describe, expect, it } from 'vitest';
import { createStore } from './index.js';

describe('createStore', () => {
  it('refuses a URL it does not know without printing its password', () => {
    expect(() => createStore({ url: 'mysql://baton:db-password@db/baton' })).toThrow(
      'DATABASE_URL must start with sqlite:, postgres:// or postgresql://, got "mysql://baton:********@db/baton"',
    );
  });
});
