import { createRequire } from 'node:module';
import { formatConfig, loadConfig, SECRET_ENV, type LoadedConfig } from '../server/index.js';
import { ConfigError } from '../config-schema/index.js';
import { ApiError } from './api-client.js';
import { describeUsageError, HelpRequested, parseCommand, subcommandOf, UsageError, type CommandGroup, type CommandSpec } from './args.js';
import { processIo, visibleIo, type CommandIo } from './io.js';
import { logsCommand, queueCommand, runsCommand } from './operator-commands.js';

const HELP = `baton: orchestrates AI coding agents for Gitea/Forgejo issues on Coder or local workspaces

Usage: baton <command> [options]

Commands:
  serve            Start the orchestrator (webhooks, queue, dispatcher, API)
  agent            Run one stage inside a workspace (see baton agent --help)
  ask QUESTION [--for WHO]
                   Inside a run: ask the issue's people; the run waits for a reply and
                   resumes the same session with it
  mcp              Inside a run: an MCP server (stdio) whose "ask" tool does what baton ask
                   does; baton registers it for Claude Code
  init [dir]       Scaffold .claude/commands/<stage>.md prompts and a baton.yaml
  migrate          Apply pending database migrations and exit
  config check     Check the configuration as serve would; print it as baton.yaml (secrets
                   masked, each key with its environment variable) or exit 1 listing every problem
  token create --name NAME [--scope read|operate|admin] | list | revoke ID_OR_NAME
                   Manage API tokens (works on the database directly); scope read
                   (default) only reads, operate also retries, cancels, pauses, submits,
                   admin also manages tokens
  run STAGE --repo OWNER/REPO [--issue N] [--arg TEXT]… [--ref BRANCH] [--follow]
                   Queue a run of a stage without a webhook (see baton run --help)
  connect OWNER/REPO [--dry-run] [--recreate]
                   Make a forge repository ready: webhook, labels, bot access (idempotent)
  doctor [--repo OWNER/REPO]…
                   Check every configured part, one line per check with the fix
  runs ls [--status S] [--stage S] [--repo OWNER/REPO] [--number N] [--limit N] [--cursor C]
  runs show|retry|cancel RUN
  queue pause|resume|stats
  logs RUN [--follow] [--transcript [--full]]
  deliveries ls [--repo OWNER/REPO] [--event E] [--verdict V] [--source webhook|sync|replay] [--cursor C]
  deliveries show|replay DELIVERY
  budgets [ls] | set SCOPE [--tokens N] [--cost-usd USD]
                   Operator commands over the API: BATON_URL (default http://127.0.0.1:3000)
                   and BATON_TOKEN; add --json for scripts
  help [command]   Show this help, or a command's

Options:
  -h, --help       Show this help; after a command, that command's options
  -v, --version    Print the version

Configuration comes from environment variables and an optional baton.yaml (BATON_CONFIG);
see docs/configuration.md.`;

export { logsCommand, queueCommand, runsCommand, sseMessages } from './operator-commands.js';
export type { CommandIo } from './io.js';

type Command = (argv: string[], io: CommandIo) => Promise<number>;

const SERVE = {
  command: 'baton serve',
  summary: 'Starts the orchestrator: webhooks, queue, dispatcher, API. Configured by the environment and baton.yaml.',
  options: {},
} as const satisfies CommandSpec;
const MIGRATE = {
  command: 'baton migrate',
  summary: 'Applies pending database migrations (DATABASE_URL) and exits; serve also applies them at start.',
  options: {},
} as const satisfies CommandSpec;
const CONFIG: CommandGroup = {
  command: 'baton config',
  summary: 'The configuration baton would run with.',
  subcommands: [
    {
      command: 'baton config check',
      summary: 'Prints the resolved configuration (secrets masked); exits 1 listing every problem.',
      options: {},
    },
  ],
};

/**
 * Runs a command, turning a bad command line into its message and usage (exit 2), `--help` into
 * the help text (exit 0) and an API error into its message (exit 1).
 */
async function run(command: Command, argv: string[], rawIo: CommandIo = processIo()): Promise<number> {
  const io = visibleIo(rawIo);
  try {
    return await command(argv, io);
  } catch (err) {
    if (err instanceof HelpRequested) {
      io.out(err.text);
      return 0;
    }
    if (err instanceof UsageError) {
      io.err(describeUsageError(err));
      return 2;
    }
    if (err instanceof ApiError) {
      io.err(`error: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

/**
 * Files baton makes from now on are its user's alone (0600, directories 0700): the database and
 * its WAL, logs, workspaces, and everything local runners write, since they inherit the umask.
 * For the commands that write to the data directory; `init` writes into a repository, as usual.
 */
function privateFiles(): void {
  process.umask(0o077);
}

const commands: Record<string, Command> = {
  serve: async (argv) => {
    parseCommand(SERVE, argv);
    privateFiles();
    const loaded = loadOrReport();
    // Read once, then gone from the environment: no child of the server (git, a runner) inherits them.
    if (loaded) for (const name of SECRET_ENV) delete process.env[name];
    // Imported on demand: `baton --help` should not pay for loading the whole server.
    const { runServe } = await import('./serve.js');
    return loaded ? runServe(loaded) : 1;
  },
  agent: async (argv) => {
    const { runAgentCommand } = await import('./agent.js');
    return runAgentCommand(argv, process.env);
  },
  ask: async (argv, io) => {
    const { askCommand } = await import('./ask.js');
    return askCommand(argv, io, process.env);
  },
  mcp: async (argv) => {
    const { mcpCommand } = await import('./mcp.js');
    return mcpCommand(argv, process.env, version());
  },
  init: async (argv) => {
    const { runInit } = await import('./init.js');
    return runInit(argv);
  },
  migrate: async (argv) => {
    parseCommand(MIGRATE, argv);
    privateFiles();
    const loaded = loadOrReport();
    if (!loaded) return 1;
    const { createStore } = await import('../store/index.js');
    const store = createStore({
      url: loaded.config.database.url,
      sqliteSynchronous: loaded.config.database.sqliteSynchronous,
      timeouts: loaded.config.database.timeouts,
    });
    try {
      const result = await store.migrate();
      console.log(result.applied.length ? `applied: ${result.applied.join(', ')}` : `up to date (${result.alreadyApplied} migrations)`);
      return 0;
    } catch (err) {
      console.error(`migration failed: ${(err as Error).message}`);
      return 1;
    } finally {
      await store.close();
    }
  },
  config: async (argv) => {
    const [check, rest] = subcommandOf(CONFIG, argv);
    parseCommand(check, rest);
    // The same pass as `serve`: what passes here starts, what fails here is refused there.
    const loaded = loadOrReport();
    if (!loaded) return 1;
    for (const notice of loaded.notices) console.error(`notice: ${notice}`);
    for (const warning of loaded.warnings) console.error(`warning: ${warning}`);
    console.log(formatConfig(loaded));
    return 0;
  },
  token: async (argv, io) => {
    privateFiles();
    // On demand, like migrate: only token commands need the database drivers.
    const { tokenCommand } = await import('./token-commands.js');
    return tokenCommand(argv, io, () => loadOrReport()?.config);
  },
  run: async (argv, io) => {
    const { runCommand } = await import('./run-command.js');
    return runCommand(argv, io);
  },
  connect: async (argv, io) => {
    const loaded = loadOrReport();
    if (!loaded) return 1;
    const { connectCommand } = await import('./connect-command.js');
    return connectCommand(argv, io, loaded.config);
  },
  doctor: async (argv, io) => {
    const { doctorCommand } = await import('./doctor-command.js');
    return doctorCommand(argv, io);
  },
  runs: runsCommand,
  queue: queueCommand,
  logs: logsCommand,
  deliveries: async (argv, io) => {
    const { deliveriesCommand } = await import('./deliveries-command.js');
    return deliveriesCommand(argv, io);
  },
  budgets: async (argv, io) => {
    const { budgetsCommand } = await import('./budgets-command.js');
    return budgetsCommand(argv, io);
  },
  help: async (argv, io) => {
    // `baton help runs` is `baton runs --help`.
    if (argv[0] !== undefined && argv[0] in commands && argv[0] !== 'help') return commands[argv[0]]!([...argv.slice(1), '--help'], io);
    io.out(HELP);
    return 0;
  },
};

/** Entry point of the `baton` bin; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help') return run(commands.help!, []);
  if (name === '-v' || name === '--version') {
    console.log(version());
    return 0;
  }
  const command = commands[name];
  if (!command) {
    console.error(`unknown command "${name}"\n\n${HELP}`);
    return 2;
  }
  return run(command, rest);
}

function loadOrReport(): LoadedConfig | undefined {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return undefined;
    }
    throw err;
  }
}

function version(): string {
  const require = createRequire(import.meta.url);
  return (require('../../package.json') as { version: string }).version;
}
