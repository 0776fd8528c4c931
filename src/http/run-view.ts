import { RUN_EVENT, totalTokens, type Run, type RunEvent } from '../runs/index.js';

/** A run as the API and the event stream show it: the run, plus derived fields people look for. */
export interface RunView extends Run {
  /** Input + output tokens (cache reads and writes are in `usage`). */
  tokens: number | null;
  /**
   * Link to the issue or pull request on the forge (Gitea redirects issue links of PRs); null
   * without GITEA_URL, and for repositories declared in baton.yaml, which are not on the forge.
   */
  issueUrl: string | null;
}

export function runView(run: Run, forgeUrl: string | undefined): RunView {
  return {
    ...run,
    tokens: totalTokens(run.usage),
    issueUrl:
      forgeUrl && run.number !== null && run.payload.declared !== true
        ? `${forgeUrl}/${encodeURIComponent(run.owner)}/${encodeURIComponent(run.repo)}/issues/${run.number}`
        : null,
  };
}

/** The log of a run: its progress batches' lines, in order. */
export function logLines(events: readonly RunEvent[]): string[] {
  const lines: string[] = [];
  for (const event of events) {
    if (event.type !== RUN_EVENT.progress) continue;
    const batch = event.data?.lines;
    if (Array.isArray(batch)) for (const line of batch) if (typeof line === 'string') lines.push(line);
  }
  return lines;
}
