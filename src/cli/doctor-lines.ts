/** One line of `baton doctor`'s report: what was checked, what was found, and for anything not ok, what to change. */
export type Status = 'ok' | 'warn' | 'FAIL' | 'info';
export interface Line {
  status: Status;
  check: string;
  detail: string;
  fix?: string;
}

/** Longest a network check waits: a doctor must answer, even about a silent server. */
export const PROBE_MS = 5_000;
