import type { Usage } from './types.js';

/**
 * Input + output tokens (cache reads and writes are in `usage` itself); null without usage. A
 * negative or non-finite field counts as 0 (usage is the workspace's claim; rows stored before
 * claims were checked may hold anything).
 */
export function totalTokens(usage: Usage | null): number | null {
  if (!usage) return null;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
  return n(usage.inputTokens) + n(usage.outputTokens);
}

/** The start of the UTC day `t` falls in (epoch ms): "today" in the queue summary and metrics. */
export function startOfUtcDay(t: number): number {
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
}
