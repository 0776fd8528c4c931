import { originRule, parseAllowRule, type AllowRule } from './allow-list.js';
import type { EgressSettings } from './config-section.js';

/**
 * The one place a run's allow-list is assembled: the agent's API hosts, the forge (its API
 * origin and the origin runs clone from, as the operator configured them), then what the
 * operator lists for every run and for the run's stage. Operator-written exact hosts (and the
 * forge) may be private addresses; wildcards and the built-in agent hosts never are.
 */
export function runAllowList(input: { stage: string; forgeUrl?: string; cloneUrl?: string; settings: EgressSettings }): AllowRule[] {
  const rules: AllowRule[] = [];
  const add = (rule: AllowRule | null) => {
    if (rule) rules.push(rule);
  };
  for (const host of input.settings.agentHosts) add(parseAllowRule(host, false));
  for (const url of [input.forgeUrl, input.cloneUrl]) if (url) add(originRule(url));
  for (const host of [...input.settings.allow, ...(input.settings.stages[input.stage] ?? [])]) add(parseAllowRule(host, true));
  return rules;
}

/**
 * The paths of baton's own listener a run may use through the gate (as `http://baton.internal`):
 * its own callbacks (the session transcript of a conversation among them) and the forge gateway. Everything else of baton (the API, the dashboard,
 * other runs' callbacks) is refused before it reaches baton.
 */
export function batonPathsFor(runId: number): (path: string) => boolean {
  const own = new Set([`/api/runs/${runId}/complete`, `/api/runs/${runId}/progress`, `/api/runs/${runId}/transcript`]);
  return (path) => own.has(path) || path.startsWith('/gateway/');
}
