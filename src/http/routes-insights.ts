import { Hono } from 'hono';
import { parseGitLabProjectPath, parseRepositoryName, REPOSITORY_NAME_RULE } from '../repositories/index.js';
import {
  daysBetween,
  FORGES,
  type ForgeName,
  MAX_USAGE_DAYS,
  parseUtcDay,
  USAGE_GROUPS,
  utcDay,
  type RunQueries,
  type UsageGroupBy,
  type UsageQuery,
} from '../runs/index.js';
import { forgeItemUrl, type ForgeWebRoots } from '../live-events/index.js';
import type { AuthEnv } from './auth.js';
import { HttpError } from '../web-kit/index.js';

export interface InsightsRoutesOptions {
  runs: Pick<RunQueries, 'issue' | 'usage'>;
  /** The configured forges' web roots, for the links to the issue and its pull requests. */
  forges?: ForgeWebRoots;
  now: () => number;
}

/** The default range of `GET /api/usage`: the last 30 days, today included. */
const DEFAULT_USAGE_DAYS = 30;
const USAGE_PARAMS = ['from', 'to', 'groupBy'];

/**
 * Views over many runs, for people: one issue through its stages (`GET /api/issues/OWNER/REPO/N`)
 * and tokens and cost over a range (`GET /api/usage`). Read-only; documented in
 * docs/api.md, "One issue through its stages, and usage".
 */
export function insightsRoutes(options: InsightsRoutesOptions): Hono<AuthEnv> {
  const { runs, forges = {}, now } = options;
  const app = new Hono<AuthEnv>();

  app.get('/api/issues/:owner/:repo/:number', async (c) => {
    const { owner, repo, number: rawNumber } = c.req.param();
    // A GitLab project in a subgroup comes with its namespace encoded as one segment (`acme%2Fplatform`).
    const name = parseRepositoryName(`${owner}/${repo}`) ?? parseGitLabProjectPath(`${owner}/${repo}`);
    if (!name) throw new HttpError(400, 'bad_request', `repository ${REPOSITORY_NAME_RULE}, got "${`${owner}/${repo}`.slice(0, 120)}"`);
    if (!/^\d{1,15}$/.test(rawNumber) || Number(rawNumber) < 1)
      throw new HttpError(400, 'bad_request', `issue number must be a positive whole number, got "${rawNumber.slice(0, 40)}"`);
    const number = Number(rawNumber);
    const forge = parseForge(c.req.query('forge'));
    const view = await runs.issue({ ...name, number, forge }, now());
    if (!view) throw new HttpError(404, 'not_found', `no run of ${name.owner}/${name.repo}#${number} or its pull requests`);
    // Links only to the configured forges (never a URL from a payload), and none for declared repositories.
    const link = (item: { number: number; pull?: boolean }) => (view.declared ? null : forgeItemUrl(forges, { ...name, forge, ...item }));
    return c.json({
      ...view,
      issueUrl: link({ number }),
      pullRequests: view.pullRequests.map((pr) => ({ ...pr, url: link({ number: pr.number, pull: true }) })),
    });
  });

  app.get('/api/usage', async (c) => c.json(await runs.usage(parseUsageQuery(c.req.query(), now()))));

  return app;
}

/**
 * `?forge=` of the issue view: which forge's issue (`gitea`, the default, `github` or `gitlab`);
 * a repository of the same name on two forges is two repositories.
 */
function parseForge(raw: string | undefined): ForgeName {
  if (raw === undefined || raw === '') return 'gitea';
  const forge = FORGES.find((f) => f === raw);
  if (!forge) throw new HttpError(400, 'bad_request', `forge must be one of ${FORGES.join(', ')}, got "${raw.slice(0, 40)}"`);
  return forge === 'forgejo' ? 'gitea' : forge;
}

/** The query of `GET /api/usage`, each parameter checked and named when wrong. */
export function parseUsageQuery(query: Record<string, string>, now: number): UsageQuery {
  for (const key of Object.keys(query)) {
    if (!USAGE_PARAMS.includes(key))
      throw new HttpError(400, 'bad_request', `unknown query parameter "${key.slice(0, 40)}" (known: ${USAGE_PARAMS.join(', ')})`);
  }
  const day = (key: 'from' | 'to'): string | undefined => {
    const value = query[key];
    if (value === undefined || value === '') return undefined;
    if (parseUtcDay(value) === null)
      throw new HttpError(400, 'bad_request', `${key} must be a date YYYY-MM-DD (a UTC day), got "${value.slice(0, 40)}"`);
    return value;
  };
  const to = day('to') ?? utcDay(now);
  const from = day('from') ?? utcDay(parseUtcDay(to)! - (DEFAULT_USAGE_DAYS - 1) * 24 * 60 * 60_000);
  if (from > to) throw new HttpError(400, 'bad_request', `from must be on or before to, got from=${from} to=${to}`);
  const days = daysBetween(from, to);
  if (days > MAX_USAGE_DAYS)
    throw new HttpError(400, 'bad_request', `the range may span at most ${MAX_USAGE_DAYS} days, got ${days} (from=${from} to=${to})`);
  const groupBy = query.groupBy === undefined || query.groupBy === '' ? 'day' : query.groupBy;
  if (!(USAGE_GROUPS as readonly string[]).includes(groupBy))
    throw new HttpError(400, 'bad_request', `groupBy must be one of ${USAGE_GROUPS.join(', ')}, got "${groupBy.slice(0, 40)}"`);
  return { from, to, groupBy: groupBy as UsageGroupBy };
}
