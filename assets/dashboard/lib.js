// Shared pieces of the dashboard: DOM building, the API client, notices and formatting.

export const FINAL = new Set(['succeeded', 'failed', 'timed_out', 'cancelled', 'dead', 'expired']);

export const $ = (sel, root = document) => root.querySelector(sel);

/** `el('a', { href, onclick }, 'text', child)`: attributes, `on*` listeners, then children. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** JSON from baton's API with the session cookie; a 401 means the session ended: back to the login page. */
export async function api(path, options = {}) {
  const response = await fetch(path, { credentials: 'same-origin', headers: { accept: 'application/json' }, ...options });
  if (response.status === 401) {
    location.reload();
    throw new Error('session expired');
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw Object.assign(new Error(body?.error?.message ?? `HTTP ${response.status}`), { status: response.status });
  return body;
}

export function notice(text) {
  const box = $('#notice');
  box.textContent = text;
  box.hidden = !text;
}

export function formatElapsed(run) {
  const start = run.startedAt ?? run.claimedAt ?? run.createdAt;
  const end = run.finishedAt ?? Date.now();
  return formatDuration(end - start);
}

/** `3d 4h`, `2h 5m`, `4m 10s`, `12s`: the two largest units are enough to read a duration. */
export function formatDuration(ms) {
  let s = Math.max(0, Math.round(ms / 1000));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  if (d) return `${d}d ${Math.floor(s / 3600)}h`;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return h ? `${h}h ${m}m` : m ? `${m}m ${s}s` : `${s}s`;
}

/**
 * `2026-11-30 09:15:02 UTC+01:00` in the browser's time zone, which it names: a timeline spans
 * days, so the date is part of it, and people comparing notes across zones need the offset.
 */
export function formatDateTime(ms) {
  const d = new Date(ms);
  const pad = (n) => String(n).padStart(2, '0');
  const offset = -d.getTimezoneOffset();
  const zone = offset === 0 ? 'UTC' : `UTC${offset > 0 ? '+' : '-'}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zone}`;
}

export const formatCost = (usd) => (usd === null || usd === undefined ? '–' : `$${Number(usd).toFixed(usd < 1 ? 4 : 2)}`);
export const formatTokens = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString());

/** The forge a run names in its key (`github`, `gitlab`); undefined for Gitea and Forgejo, whose names carry none. */
export const namedForge = (forge) => (forge === 'github' || forge === 'gitlab' ? forge : undefined);

export const issueLabel = (run) => (run.number === null ? `${run.owner}/${run.repo}` : `${run.owner}/${run.repo}#${run.number}`);
