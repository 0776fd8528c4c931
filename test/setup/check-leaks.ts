/**
 * Fails a test that leaves a server, a socket or pool connection, an open file, a child process
 * or a timer behind (test/helpers/leaks.ts), naming each one; and fails a file whose
 * `beforeAll`/`afterAll` pair (or module code) leaves one behind. Loaded by vitest as a
 * setupFiles module, before each test file.
 */
import { afterAll, afterEach, beforeEach } from 'vitest';
import { leaksAfterSettling, takeSnapshot, trackTimers, type Snapshot } from '../helpers/leaks.js';

/**
 * How long closing things may take to disappear after a test: a closed socket or an exited
 * child goes away a moment later. Leaks are reported when it runs out; a clean test does not
 * wait at all. (The checker's own test shortens it for its deliberately leaking fixtures.)
 */
const SETTLE_MS = Number(process.env.BATON_TEST_LEAK_SETTLE_MS) || 2_000;

trackTimers();
// Taken when this module loads, before the test file's own module code runs: what that code
// opens counts too.
const atFileStart = takeSnapshot();
let atTestStart: Snapshot | undefined;

beforeEach(() => {
  atTestStart = takeSnapshot();
});

afterEach(async (context) => {
  const leaks = await leaksAfterSettling(atTestStart!, SETTLE_MS, { ownTimeoutsOnly: true });
  if (leaks.length > 0) {
    throw new Error(`"${context.task.name}" left behind:\n${leaks.map((l) => `  - ${l}`).join('\n')}`);
  }
});

afterAll(async () => {
  const leaks = await leaksAfterSettling(atFileStart, SETTLE_MS);
  if (leaks.length > 0) throw new Error(`this test file left behind:\n${leaks.map((l) => `  - ${l}`).join('\n')}`);
});
