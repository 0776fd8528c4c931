import { originRule, parseAllowRule, type AllowRule } from './allow-list.js';
import type { EgressSettings } from './config-section.js';

/**
 * The one place a run's allow-list is assembled: the agent's API hosts, where the run reaches its
 * forge directly (only what does not go through baton's forge gateway: a clone source that is not
 * the forge's, a GitHub repository a run without a forge credential clones), then what the operator
 * lists for every run and for the run's stage. Baton's own origin is never on it: the forge URL and
 * clone URL of a run on Gitea, Forgejo, GitHub or GitLab are baton's gateway, which the run reaches
 * as `http://baton.internal/gateway` and nothing else, so a run has no way to its forge but the
 * gateway. Operator-written exact hosts (and direct forge
 * origins) may be private addresses; wildcards and the built-in agent hosts never are.
 */
export function runAllowList(input: {
  stage: string;
  /** The run's GITEA_URL (the gateway's for a run with a forge credential). */
  forgeUrl?: string;
  cloneUrl?: string;
  /** Other forge URLs the run uses directly (the API root of a GitHub run outside the gateway). */
  forgeUrls?: readonly string[];
  /** Baton's base URL (the run's callback URL will do): its origin is left out. */
  batonUrl?: string;
  settings: EgressSettings;
}): AllowRule[] {
  const rules: AllowRule[] = [];
  const add = (rule: AllowRule | null) => {
    if (rule) rules.push(rule);
  };
  const baton = input.batonUrl ? originRule(input.batonUrl) : null;
  const isBaton = (rule: AllowRule | null) => baton !== null && rule !== null && rule.host === baton.host && rule.port === baton.port;
  for (const host of input.settings.agentHosts) add(parseAllowRule(host, false));
  for (const url of [input.forgeUrl, input.cloneUrl, ...(input.forgeUrls ?? [])]) {
    const rule = url ? originRule(url) : null;
    if (!isBaton(rule) && !rules.some((r) => r.host === rule?.host && r.port === rule.port)) add(rule);
  }
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
