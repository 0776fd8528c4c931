import type { AgentStatus } from '../runner-contract/index.js';

/** Why the runner is ending the run early (a limit, or the runner itself being stopped). */
export interface StopRequest {
  status: AgentStatus;
  summary: string;
  kind: string;
}

/** Thrown out of a step once a stop was requested, carrying the reason to report. */
export class Stopped extends Error {
  constructor(readonly request: StopRequest) {
    super(request.summary);
    this.name = 'Stopped';
  }
}
