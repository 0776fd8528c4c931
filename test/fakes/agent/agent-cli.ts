// Runs `baton agent` from the TypeScript sources (node --import tsx), for tests that need the
// runner as a real process: SIGTERM handling, the local provider end to end.
import { runAgentCommand } from '../../../src/cli/agent.js';

process.exitCode = await runAgentCommand(process.argv.slice(2), process.env);
