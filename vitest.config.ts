import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Fails a test that leaves servers, pools, files, child processes or timers behind.
    setupFiles: ['test/setup/check-leaks.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // Integration suites share one PostgreSQL server; each test uses its own schema,
    // but two forks keep CPU contention on a 2-core machine predictable.
    pool: 'forks',
    maxWorkers: 2,
  },
});
