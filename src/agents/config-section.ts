import { invalid, join, list, mapping, number, oneOf, record, secret, section, text, type ResolveContext } from '../config-schema/index.js';
import { DEFAULT_PRICES, type ModelPrice, type PriceTable } from './pricing.js';
import { AGENT_ADAPTERS } from './registry.js';
import { AGENT_NAMES, type AgentName } from './types.js';

/** What baton.yaml says about one agent. */
export interface AgentSettings {
  /** The executable and any words before baton's own arguments; absent = the adapter's executable. */
  command?: string[];
  /** The model of stages that name none. */
  model?: string;
  /** The credential handed to its runs (never through baton's own environment to other agents). */
  apiKey?: string;
}

export interface AgentsConfig {
  /** The agent of stages that name none. @default 'claude' */
  default: AgentName;
  settings: Readonly<Record<AgentName, AgentSettings>>;
  /** DEFAULT_PRICES with `agents.prices` over them. */
  prices: PriceTable;
}

/** Model names as the CLIs take them: `opus`, `gpt-5-codex`, `gemini-2.5-pro`, `anthropic/claude-sonnet-4-5`. */
export const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/[\]-]{0,127}$/;

const modelText = (doc: string) =>
  text({
    doc,
    check: (v) => (MODEL_NAME.test(v) ? undefined : invalid('must be a model name such as gpt-5-codex or anthropic/claude-sonnet-4-5')),
  });

const command = list(text({ doc: 'a word of the command' }), {
  doc: "the agent's executable and any words before baton's own arguments (e.g. [npx, --no-install, codex]); default: the CLI's name",
});

const agentMapping = (name: AgentName) => {
  const adapter = AGENT_ADAPTERS[name];
  const shape = {
    command,
    model: modelText(`the model of stages that name none (default: the CLI's own)`),
  };
  const env = adapter.credential && adapter.credential.secret !== 'CLAUDE_CODE_OAUTH_TOKEN' ? adapter.credential.serverEnv : undefined;
  return env
    ? mapping({ ...shape, apiKey: secret({ env, doc: `${adapter.credential!.doc}, handed only to ${adapter.title} runs` }) })
    : mapping(shape);
};

const price = mapping({
  input: number({ min: 0, doc: 'USD per million fresh input tokens' }),
  cachedInput: number({ min: 0, doc: 'USD per million cached input tokens (default: input)' }),
  output: number({ min: 0, doc: 'USD per million output tokens' }),
  cacheWrite: number({ min: 0, doc: 'USD per million tokens written to the prompt cache (default: input)' }),
});

/**
 * `agents:` in baton.yaml: which agent stages run by default, each agent's command, model and
 * credential, and the price table for agents whose CLI reports no cost.
 *
 * ```yaml
 * agents:
 *   default: claude
 *   codex: { model: gpt-5-codex }              # key from BATON_CODEX_API_KEY
 *   gemini: { model: gemini-2.5-flash }        # key from BATON_GEMINI_API_KEY
 *   opencode: { model: anthropic/claude-sonnet-4-5 }
 *   prices:
 *     gpt-5-codex: { input: 1.25, cachedInput: 0.125, output: 10 }
 * ```
 */
export const agentsSection = section(
  mapping({
    default: oneOf(AGENT_NAMES, { default: 'claude', env: 'BATON_DEFAULT_AGENT', doc: 'the agent of stages that name none' }),
    claude: agentMapping('claude'),
    codex: agentMapping('codex'),
    gemini: agentMapping('gemini'),
    opencode: agentMapping('opencode'),
    text: mapping({
      command: list(text({ doc: 'a word; {prompt} is replaced by the prompt' }), { doc: 'the whole argv of a text-mode CLI' }),
    }),
    prices: record(price, { doc: 'model name to its price in USD per million tokens, over the built-in table (docs/pipeline.md)' }),
  }),
  (v, ctx: ResolveContext<object>): AgentsConfig => {
    const settings = {} as Record<AgentName, AgentSettings>;
    for (const name of AGENT_NAMES) {
      const raw = (v[name] ?? {}) as { command?: string[]; model?: string; apiKey?: string };
      if (raw.command !== undefined && (raw.command.length === 0 || raw.command[0] === '')) {
        ctx.problem(`${join('agents', name)}.command must name an executable`);
      }
      if (name !== 'text' && raw.command?.some((w) => w.includes('{prompt}'))) {
        ctx.problem(`${join('agents', name)}.command names the executable only (baton adds the options and the prompt); remove "{prompt}"`);
      }
      settings[name] = {
        ...(raw.command?.length ? { command: raw.command } : {}),
        ...(raw.model ? { model: raw.model } : {}),
        ...(raw.apiKey ? { apiKey: raw.apiKey } : {}),
      };
    }
    const prices: Record<string, ModelPrice> = { ...DEFAULT_PRICES };
    for (const [model, p] of Object.entries(v.prices ?? {})) {
      if (p.input === undefined || p.output === undefined) {
        ctx.problem(`${join('agents.prices', model)} needs input and output (USD per million tokens)`);
        continue;
      }
      prices[model] = {
        input: p.input,
        output: p.output,
        ...(p.cachedInput !== undefined ? { cachedInput: p.cachedInput } : {}),
        ...(p.cacheWrite !== undefined ? { cacheWrite: p.cacheWrite } : {}),
      };
    }
    return { default: v.default, settings, prices };
  },
);
