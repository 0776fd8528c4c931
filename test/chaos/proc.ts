import fs from 'node:fs';

export interface RunProcess {
  pid: number;
  command: string;
  runId: string;
}

/**
 * Every process on this machine that belongs to a run of this scenario, read from /proc: the
 * sandbox, the runner and the agent all carry the run's variables, `BATON_RUN_ID` and `GITEA_URL`,
 * the scenario's own fake Gitea (a port no other test uses; baton serve has it too, but no run id).
 * A process that exits between listing and reading is simply not there.
 */
export function runProcesses(giteaUrl: string): RunProcess[] {
  const marker = `GITEA_URL=${giteaUrl}`;
  const found: RunProcess[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const env = fs.readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      const runId = env.find((v) => v.startsWith('BATON_RUN_ID='))?.slice('BATON_RUN_ID='.length);
      if (!env.includes(marker) || runId === undefined) continue;
      const command = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      found.push({ pid: Number(entry), command, runId });
    } catch {
      // exited meanwhile, or a kernel thread
    }
  }
  return found;
}
