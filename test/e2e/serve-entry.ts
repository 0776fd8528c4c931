// Runs the real CLI from source (no build step) so e2e tests can start `baton serve` as a process.
import { main } from '../../src/cli/index.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
