#!/usr/bin/env node
// A develop agent for GitHub and GitLab runs, as the model's shell commands would do the work:
// it reads its forge from the variables that forge's tools read (GitHub: GH_TOKEN and
// GITHUB_API_URL; GitLab: GITLAB_TOKEN and CI_API_V4_URL), commits on feature/issue-<N>-forge-agent,
// pushes it with git and opens the pull (merge) request with curl, both through the run's proxy
// variables. It also tries what it must not be able to do, reports every answer, then ends like
// Claude Code (stream-json result).
//
//   node forge-agent.mjs --targets <file.json>
//
// targets: {
//   reportUrl: string          where to POST the report, through $http_proxy (a host the operator allowed)
//   otherRepository: string    `owner/name` of another repository the bot may write to
//   direct?: string            the forge's own URL, asked directly (no gateway) with the capability
// }
//
// The report: { env, forge, pushes: {name, ok, output}[], api: {name, status, body}[] }.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const args = process.argv.slice(2);
const targets = JSON.parse(fs.readFileSync(path.resolve(args[args.indexOf('--targets') + 1]), 'utf8'));
const session = 'forge-agent';
const emit = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
emit({ type: 'system', subtype: 'init', session_id: session, cwd: process.cwd(), tools: [], model: 'forge-agent' });

const github = Boolean(process.env.GITHUB_API_URL && process.env.GH_TOKEN);
const issue = process.env.ISSUE_NUMBER ?? '0';
const branch = `feature/issue-${issue}-forge-agent`;
const report = { env: { ...process.env }, forge: github ? 'github' : 'gitlab', pushes: [], api: [] };

// The forge's own shapes: GitHub's /repos/{owner}/{repo}, GitLab's /projects/{url-encoded path}.
const api = github ? process.env.GITHUB_API_URL : process.env.CI_API_V4_URL;
const auth = github ? `Authorization: Bearer ${process.env.GH_TOKEN}` : `PRIVATE-TOKEN: ${process.env.GITLAB_TOKEN}`;
const repoPath = (full) => (github ? `/repos/${full}` : `/projects/${encodeURIComponent(full)}`);
const own = github ? process.env.GITHUB_REPOSITORY : process.env.CI_PROJECT_PATH;

const repository = curl('own repository', 'GET', `${api}${repoPath(own)}`);
const defaultBranch = safeJson(repository.body)?.default_branch ?? 'main';

const git = (...a) => spawnSync('git', a, { encoding: 'utf8' });
git('checkout', '-q', '-b', branch);
fs.writeFileSync('forge-agent.txt', `the forge agent was here (issue ${issue})\n`);
git('add', 'forge-agent.txt');
git('commit', '-q', '-m', `Forge agent's change (#${issue})`);
for (const [name, ref] of [
  ['default branch', `refs/heads/${defaultBranch}`],
  ['own branch', `refs/heads/${branch}`],
]) {
  const r = git('push', 'origin', `HEAD:${ref}`);
  report.pushes.push({ name, ok: r.status === 0, output: `${r.stdout}${r.stderr}`.slice(-600) });
}

const opened = github
  ? { title: `Forge agent's change (#${issue})`, head: branch, base: defaultBranch, body: `Closes #${issue}` }
  : { title: `Forge agent's change (#${issue})`, source_branch: branch, target_branch: defaultBranch, description: `Closes #${issue}` };
curl('open', 'POST', `${api}${repoPath(own)}${github ? '/pulls' : '/merge_requests'}`, opened);
curl('other repository', 'GET', `${api}${repoPath(targets.otherRepository)}`);
curl('graphql', 'POST', `${api.replace(/\/api\/v[34]$/, '')}/api/graphql`, { query: '{ viewer { login } }' });
if (targets.direct) curl('direct', 'GET', `${targets.direct}${github ? '/api/v3/user' : '/api/v4/user'}`);

const status = await post(targets.reportUrl, JSON.stringify(report)).catch((err) => String(err));
emit({ type: 'result', subtype: 'success', is_error: false, num_turns: 1, session_id: session, result: `forge agent reported: ${status}` });

/** One API call with curl (which honours the run's proxy variables), answered as { name, status, body }. */
function curl(name, method, url, body) {
  const argv = ['-sS', '-X', method, '-H', auth, '-H', 'Content-Type: application/json', '-w', '\n%{http_code}', url];
  if (body !== undefined) argv.push('--data-binary', JSON.stringify(body));
  const r = spawnSync('curl', argv, { encoding: 'utf8' });
  const text = `${r.stdout ?? ''}`;
  const cut = text.lastIndexOf('\n');
  const answer = {
    name,
    status: Number(text.slice(cut + 1)) || 0,
    body: (cut >= 0 ? text.slice(0, cut) : text).slice(0, 2000) || r.stderr,
  };
  report.api.push(answer);
  return answer;
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A POST through $http_proxy (absolute URI, as curl sends one): resolves to the status. */
function post(url, text) {
  const proxy = new URL(process.env.http_proxy);
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: proxy.hostname,
        port: proxy.port,
        method: 'POST',
        path: target.href,
        headers: { host: target.host, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}
