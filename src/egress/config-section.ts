import { invalid, join, list, mapping, oneOf, record, section, text, type ResolveContext } from '../config-schema/index.js';
import { parseAllowRule } from './allow-list.js';

/**
 * The `egress:` section of baton.yaml: what a local run may reach through its egress gate, on
 * top of the forge and the agent's API.
 *
 * ```yaml
 * egress:
 *   gate: on                       # off: runs share the host's network (warned about at every start)
 *   allow: [registry.npmjs.org]    # every run, every stage
 *   stages:
 *     develop: ["*.pypi.org", files.pythonhosted.org]
 * ```
 */
export interface EgressSettings {
  /** @default 'on' */
  gate: 'on' | 'off';
  /** @default the hosts Claude Code needs */
  agentHosts: string[];
  allow: string[];
  stages: Record<string, string[]>;
}

/**
 * What Claude Code reaches, as its network requirements list them (code.claude.com/docs/en/network-config,
 * "Network access requirements"): the API, claude.ai (WebFetch's safety check), telemetry, error reports.
 */
export const CLAUDE_CODE_HOSTS = ['api.anthropic.com', 'claude.ai', 'statsig.anthropic.com', 'sentry.io'];

const pattern = (doc: string) =>
  text({
    doc,
    check: (v) => (parseAllowRule(v, true) ? undefined : invalid('must be a host name, *.domain or an IP address, optionally with :port')),
  });

export const egressSection = section(
  mapping({
    gate: oneOf(['on', 'off'] as const, {
      default: 'on',
      env: 'BATON_EGRESS_GATE',
      doc: "on: each local run has a network of its own and reaches only its allow-list, through baton's egress gate; off: runs share the host's network (warned about at every start)",
    }),
    agentHosts: list(pattern('a host the agent CLI needs'), {
      doc: "the agent CLI's own hosts, allowed for every run (default: Claude Code's)",
    }),
    allow: list(pattern('a host runs may reach'), {
      env: 'BATON_EGRESS_ALLOW',
      doc: 'hosts every run may reach besides the forge and the agent hosts (host, *.domain, host:port)',
    }),
    stages: record(list(pattern('a host'), { doc: 'hosts this stage may reach' }), {
      doc: "stage name to hosts only its runs may reach (an install step's package registry, say)",
    }),
  }),
  (v, ctx: ResolveContext<{ pipeline: { stages: ReadonlyArray<{ name: string }> } }>): EgressSettings => {
    const known = ctx.deps.pipeline.stages.map((s) => s.name);
    for (const name of Object.keys(v.stages ?? {})) {
      if (!known.includes(name))
        ctx.problem(`${join('egress.stages', name)} names no stage of the pipeline (${known.join(', ')}), got "${name}"`);
    }
    return {
      gate: v.gate,
      agentHosts: v.agentHosts ?? [...CLAUDE_CODE_HOSTS],
      allow: v.allow ?? [],
      stages: Object.fromEntries(Object.entries(v.stages ?? {}).map(([stage, hosts]) => [stage, hosts ?? []])),
    };
  },
);
