import { createApiClient } from './api-client.js';
import { parseCommand, subcommandOf, UsageError, type CommandGroup } from './args.js';
import { formatTime, table } from './format.js';
import { type CommandIo, visibleIo } from './io.js';

/** The API's budget overview (docs/budgets.md). */
interface Amount {
  limit: number;
  used: number;
  remaining: number;
}
interface BudgetsOverview {
  timezone: string;
  day: string;
  resetsAt: number;
  held: number;
  budgets: Array<{ scope: string; tokens: Amount | null; costUsd: Amount | null; raised: boolean; exhausted: boolean; held: number }>;
}

const JSON_OPTION = { json: { type: 'boolean', description: 'print JSON for scripts' } } as const;

const BUDGETS_LS = {
  command: 'baton budgets ls',
  summary: "Shows today's daily budgets: limits, what is used and left, and the runs each holds (BATON_URL, BATON_TOKEN).",
  options: JSON_OPTION,
} as const;
const BUDGETS_SET = {
  command: 'baton budgets set',
  positionals: ['SCOPE'],
  summary:
    "Sets today's limits of a configured budget (global, repository:OWNER/REPO or stage:NAME) until the day ends; held runs it lets through start at once (needs an admin token).",
  options: {
    tokens: { type: 'string', value: 'N', description: "today's token limit (input + output), a whole number > 0" },
    'cost-usd': { type: 'string', value: 'USD', description: "today's cost limit in USD, a number > 0" },
    ...JSON_OPTION,
  },
} as const;

export const BUDGETS_COMMANDS: CommandGroup = {
  command: 'baton budgets',
  summary: 'The daily budgets of a running baton, over its API (BATON_URL, BATON_TOKEN).',
  subcommands: [{ ...BUDGETS_LS, aliases: ['list'] }, BUDGETS_SET],
};

/** `baton budgets ls|set`. */
export async function budgetsCommand(argv: string[], rawIo: CommandIo): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  // `baton budgets` alone lists them.
  const [spec, rest] = subcommandOf(BUDGETS_COMMANDS, argv.length === 0 ? ['ls'] : argv);
  if (spec.command === BUDGETS_LS.command) {
    const { values } = parseCommand(BUDGETS_LS, rest);
    const overview = await createApiClient(io).get<BudgetsOverview>('/api/budgets');
    io.out(values.json ? JSON.stringify(overview, null, 2) : describe(overview));
    return 0;
  }
  const { positionals, values } = parseCommand(BUDGETS_SET, rest);
  const scope = positionals[0];
  if (!scope || !/^(global|repository:[^/\s]+\/[^/\s]+|stage:\S+)$/.test(scope)) {
    throw new UsageError(
      `${BUDGETS_SET.command}: SCOPE must be global, repository:OWNER/REPO or stage:NAME${scope ? `, got "${scope}"` : ''}`,
      BUDGETS_SET,
    );
  }
  const limits: { tokens?: number; costUsd?: number } = {};
  if (values.tokens !== undefined) {
    if (!/^\d{1,15}$/.test(values.tokens) || Number(values.tokens) < 1)
      throw new UsageError(`${BUDGETS_SET.command}: --tokens must be a whole number > 0, got "${values.tokens}"`, BUDGETS_SET);
    limits.tokens = Number(values.tokens);
  }
  if (values['cost-usd'] !== undefined) {
    const cost = Number(values['cost-usd']);
    if (!/^\d+(\.\d+)?$/.test(values['cost-usd']) || !(cost > 0))
      throw new UsageError(`${BUDGETS_SET.command}: --cost-usd must be a number > 0, got "${values['cost-usd']}"`, BUDGETS_SET);
    limits.costUsd = cost;
  }
  if (limits.tokens === undefined && limits.costUsd === undefined) {
    throw new UsageError(`${BUDGETS_SET.command}: give --tokens, --cost-usd or both`, BUDGETS_SET);
  }
  const overview = await createApiClient(io).post<BudgetsOverview>('/api/budgets', { scope, ...limits });
  io.out(values.json ? JSON.stringify(overview, null, 2) : describe(overview));
  return 0;
}

function describe(o: BudgetsOverview): string {
  const heading = `${o.day} (${o.timezone}), resets ${formatTime(o.resetsAt)} UTC; runs held: ${o.held}`;
  if (o.budgets.length === 0) return `${heading}\nno budgets are configured (budgets: in baton.yaml)`;
  const amount = (a: Amount | null, format: (n: number) => string) =>
    a === null ? null : `${format(a.used)} of ${format(a.limit)} (${format(a.remaining)} left)`;
  const tokens = (n: number) => n.toLocaleString('en-US');
  const usd = (n: number) => `$${n.toFixed(2)}`;
  return `${heading}\n\n${table(
    ['SCOPE', 'TOKENS', 'COST', 'STATE', 'HELD'],
    o.budgets.map((b) => [
      b.scope,
      amount(b.tokens, tokens),
      amount(b.costUsd, usd),
      [b.exhausted ? 'spent' : 'open', ...(b.raised ? ['raised today'] : [])].join(', '),
      b.held,
    ]),
  )}`;
}
