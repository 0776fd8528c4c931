#!/usr/bin/env node
// A hostile agent run next to its runner (no nested sandbox, the runner's uid): it tries to read
// the runner's memory and environment, asks the runner to open Node's inspector (SIGUSR1), and
// does the same reads on a child of its own as the control that such reads work here. It reports
// in its result text (JSON), then ends like Claude Code (stream-json).
//
//   node runner-spy.mjs [ignored Claude Code options…]
//
// The report: { uid, runner: { pid, uid, cmdline }, reads: [{ target, ok, error?, found? }] },
// where `found` says whether CALLBACK_TOKEN= appeared in what was read.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

const session = 'runner-spy';
const emit = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
emit({ type: 'system', subtype: 'init', session_id: session, cwd: process.cwd(), tools: [], model: 'spy' });

const ppid = Number(
  fs
    .readFileSync('/proc/self/stat', 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ')[1],
);
const uidOf = (pid) => Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const report = {
  uid: process.getuid(),
  runner: { pid: ppid, uid: uidOf(ppid), cmdline: fs.readFileSync(`/proc/${ppid}/cmdline`, 'utf8').split('\0').join(' ') },
  reads: [],
};

// The control: a dumpable process of the same uid, with a marker in its environment.
const control = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], {
  env: { ...process.env, CALLBACK_TOKEN: 'control-marker' },
  stdio: 'ignore',
});

// Node opens its inspector on SIGUSR1; a runner that keeps the signal is not opened.
process.kill(ppid, 'SIGUSR1');

for (const pid of [ppid, control.pid]) {
  readTarget(`/proc/${pid}/environ`, () => fs.readFileSync(`/proc/${pid}/environ`, 'latin1'));
  readTarget(`/proc/${pid}/mem`, () => readMemory(pid));
}
control.kill('SIGKILL');
emit({ type: 'result', subtype: 'success', is_error: false, num_turns: 1, session_id: session, result: JSON.stringify(report) });

function readTarget(target, read) {
  try {
    const text = read();
    report.reads.push({ target, ok: true, found: text.includes('CALLBACK_TOKEN=') });
  } catch (err) {
    report.reads.push({ target, ok: false, error: err.code ?? String(err) });
  }
}

/** The process's writable mappings through /proc/<pid>/mem, as a debugger reads them (first 64 MiB). */
function readMemory(pid) {
  // Opened first: the open is what the kernel checks (ptrace access mode ATTACH).
  const fd = fs.openSync(`/proc/${pid}/mem`, 'r');
  try {
    const maps = fs.readFileSync(`/proc/${pid}/maps`, 'latin1');
    let text = '';
    let budget = 64 * 1024 * 1024;
    for (const line of maps.split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) rw/.exec(line);
      if (!m || budget <= 0) continue;
      const start = Number.parseInt(m[1], 16);
      const length = Math.min(Number.parseInt(m[2], 16) - start, budget);
      const buffer = Buffer.alloc(length);
      try {
        const n = fs.readSync(fd, buffer, 0, length, start);
        text += buffer.toString('latin1', 0, n).includes('CALLBACK_TOKEN=') ? 'CALLBACK_TOKEN=' : '';
      } catch {
        // A guard page or a mapping gone meanwhile.
      }
      budget -= length;
    }
    return text;
  } finally {
    fs.closeSync(fd);
  }
}
