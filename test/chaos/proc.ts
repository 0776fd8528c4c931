import fs from 'node:fs';

export interface RunProcess {
  pid: number;
  command: string;
  runId: string;
}

/**
 * Every process on this machine that belongs to a run of this scenario, read from /proc: the
 * sandbox, the runner and the agent all carry the run's `BATON_RUN_ID`, and each names the
 * scenario's own data directory (a fresh temporary one) in its command line, its environment or
 * its mounts (a sandboxed process sees its workspace as a mount; its `GITEA_URL` is the forge
 * gateway's, the same for every scenario). A process that exits between listing and reading is
 * simply not there.
 */
export function runProcesses(dataDir: string): RunProcess[] {
  const marker = `${dataDir}/`;
  const found: RunProcess[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = fs.readFileSync(`/proc/${entry}/environ`, 'utf8');
      const runId = environ
        .split('\0')
        .find((v) => v.startsWith('BATON_RUN_ID='))
        ?.slice('BATON_RUN_ID='.length);
      if (runId === undefined) continue;
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const ours =
        cmdline.includes(marker) || environ.includes(marker) || fs.readFileSync(`/proc/${entry}/mountinfo`, 'utf8').includes(marker);
      if (!ours) continue;
      found.push({ pid: Number(entry), command: cmdline.split('\0').join(' ').trim(), runId });
    } catch {
      // exited meanwhile, or a kernel thread
    }
  }
  return found;
}
