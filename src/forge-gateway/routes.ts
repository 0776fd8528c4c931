import { Hono, type Context } from 'hono';
import type { Logger } from '../log/index.js';
import type { CallbackTokenChecks, RunService, Run } from '../runs/index.js';
import { macMatches, parseCapability } from './capability.js';
import { readRefUpdates, refusedPushReport } from './pkt-line.js';
import { branchAllowed, DEFAULT_RIGHTS, describeRules, type RunRights } from './rights.js';

/** Where the gateway lives on baton's HTTP app: `GITEA_URL` of a run is `<baton>/gateway`. */
export const GATEWAY_PREFIX = '/gateway';
/** Largest request the gateway passes on (a push of a big change); more gets 413. */
const MAX_BODY_BYTES = 256 * 1024 * 1024;
/** A run's capability is good while the run can still be working. */
const LIVE = new Set(['queued', 'provisioning', 'running']);
/** Endpoints outside the repository that tools ask for (tea, the agent's curl calls). */
const GLOBAL_READS = new Set(['/api/v1/version', '/api/v1/user', '/api/v1/settings/api']);
/** What the review account may change: comments and reviews, nothing else. */
const REVIEW_WRITES = [/^\/issues\/\d+\/comments$/, /^\/pulls\/\d+\/reviews$/, /^\/pulls\/\d+\/reviews\/\d+(\/comments)?$/];
/**
 * What the dev account may change through the API, by method and path under the repository: the
 * work the stage prompts do (issues, their comments and labels, pull requests, reviews, a draft
 * release). Everything else the bot's rights would allow is refused: collaborators, deploy keys,
 * webhooks, settings, branch protections, file writes through `contents` (a commit to the default
 * branch past the push check), deleting the repository. A merge needs the stage's `merge`; a
 * release must be a draft (publishing one makes its tag).
 */
const DEV_WRITES: readonly [RegExp, RegExp][] = [
  [/^POST$/, /^\/issues$/],
  [/^PATCH$/, /^\/issues\/\d+$/],
  [/^POST$/, /^\/issues\/\d+\/comments$/],
  [/^(PATCH|DELETE)$/, /^\/issues\/comments\/\d+$/],
  [/^(POST|PUT|DELETE)$/, /^\/issues\/\d+\/labels(\/[^/]+)?$/],
  [/^(POST|DELETE)$/, /^\/issues\/(\d+|comments\/\d+)\/reactions$/],
  [/^POST$/, /^\/pulls$/],
  [/^PATCH$/, /^\/pulls\/\d+$/],
  [/^POST$/, /^\/pulls\/\d+\/reviews(\/\d+(\/comments)?)?$/],
  [/^(POST|DELETE)$/, /^\/pulls\/\d+\/requested_reviewers$/],
  [/^POST$/, /^\/pulls\/\d+\/merge$/],
  [/^POST$/, /^\/releases$/],
];

export interface ForgeGatewayDeps {
  /** GITEA_URL: where requests go once the capability is swapped for the bot's token. */
  forgeUrl: string;
  /** Where git's smart HTTP goes (GITEA_CLONE_URL, the same forge at another address). @default forgeUrl */
  gitUrl?: string;
  /** The bots' real tokens, by account. */
  tokens: { dev?: string; review?: string };
  /** Which live run a capability was derived from (its callback token hashes). */
  callbackTokens: Pick<CallbackTokenChecks, 'verifyByTokenHash'>;
  /** Where a refusal is written: the run's log. */
  engine: Pick<RunService, 'appendProgress'>;
  logger: Pick<Logger, 'warn' | 'info'>;
  /** What the run's stage may push and whether it may merge (`pipeline.stages.<name>.push`, `.merge`). @default DEFAULT_RIGHTS */
  rightsOf?: (run: Run) => RunRights;
  fetch?: typeof fetch;
}

type Target = { kind: 'global' } | { kind: 'api'; rest: string } | { kind: 'git'; service: 'info' | 'upload' | 'receive' };

/**
 * The forge gateway: the agent's only door to the forge. It accepts a run's capability (never
 * the bot's token) only while the run is live and only for the run's repository, its API paths
 * and git smart HTTP, swaps it for the bot's token on the way out, never answers with that token,
 * refuses pushes to the default or a protected branch and the review account's changes other
 * than comments and reviews, and writes each refusal into the run's log.
 */
export function forgeGatewayRoutes(deps: ForgeGatewayDeps): Hono {
  const app = new Hono();
  const doFetch = deps.fetch ?? fetch;
  const forge = deps.forgeUrl.replace(/\/+$/, '');
  const gitBase = (deps.gitUrl ?? deps.forgeUrl).replace(/\/+$/, '');

  app.all(`${GATEWAY_PREFIX}/*`, async (c) => {
    const path = c.req.path.slice(GATEWAY_PREFIX.length) || '/';
    const presented = credentialOf(c);
    const capability = presented ? parseCapability(presented) : null;
    const run = capability
      ? await deps.callbackTokens.verifyByTokenHash(capability.runId, (hash) => macMatches(capability.runId, hash, capability.mac))
      : null;
    if (!run) {
      c.header('WWW-Authenticate', 'Basic realm="baton forge gateway"');
      return c.json({ message: 'the forge gateway needs the run capability baton gave this run (GITEA_TOKEN)' }, 401);
    }
    if (!LIVE.has(run.status)) {
      return refuse(c, run, 401, `the run is ${run.status}: its capability is no longer accepted`);
    }
    const target = targetOf(path, c.req.query('service'), run);
    if (!target)
      return refuse(c, run, 403, `${c.req.method} ${path.slice(0, 160)} is outside this run's repository ${run.owner}/${run.repo}`);
    const review = run.payload.account === 'review';
    const token = review ? deps.tokens.review : deps.tokens.dev;
    if (!token) return refuse(c, run, 403, `no ${review ? 'review' : 'dev'} bot token is configured`);
    const method = c.req.method.toUpperCase();
    const reading = method === 'GET' || method === 'HEAD';
    if (target.kind === 'global' && !reading) return refuse(c, run, 403, `${method} ${path} is not allowed through the gateway`);
    if (review && target.kind === 'api' && !reading && !(method === 'POST' && REVIEW_WRITES.some((r) => r.test(target.rest)))) {
      return refuse(c, run, 403, `the review account may only comment and review; ${method} ${path.slice(0, 160)} refused`);
    }
    const rights = deps.rightsOf?.(run) ?? DEFAULT_RIGHTS;
    if (!review && target.kind === 'api' && !reading) {
      if (!DEV_WRITES.some(([m, p]) => m.test(method) && p.test(target.rest)))
        return refuse(c, run, 403, `${method} ${path.slice(0, 160)} is not a change runs may make through the gateway`);
      if (/^\/pulls\/\d+\/merge$/.test(target.rest) && !rights.merge)
        return refuse(c, run, 403, `the ${run.stage} stage may not merge pull requests (pipeline.stages.${run.stage}.merge)`);
    }
    const pushing = target.kind === 'git' && (target.service === 'receive' || c.req.query('service') === 'git-receive-pack');
    if (review && pushing) return refuse(c, run, 403, 'the review account may not push');
    if (pushing && rights.push.length === 0)
      return refuse(c, run, 403, `the ${run.stage} stage may push no branch (pipeline.stages.${run.stage}.push)`);

    const length = Number(c.req.header('content-length') ?? 0);
    if (length > MAX_BODY_BYTES) return refuse(c, run, 413, `a request of ${length} bytes is over the gateway's limit`);
    const body = reading ? undefined : new Uint8Array(await c.req.arrayBuffer());
    if (body && body.byteLength > MAX_BODY_BYTES) return refuse(c, run, 413, "the request is over the gateway's limit");

    if (target.kind === 'git' && target.service === 'receive' && body) {
      const problem = await pushProblem(body, run, token, rights);
      if (problem) {
        const read = readRefUpdates(body);
        if ('error' in read || read.updates.length === 0) return refuse(c, run, 403, problem);
        // Refused in git's own words, so the agent's `git push` says why (each ref `! [remote rejected]`).
        await refuse(c, run, 403, problem);
        return new Response(refusedPushReport(read.updates, read.capabilities, `baton's forge gateway refused this: ${problem}`), {
          status: 200,
          headers: { 'content-type': 'application/x-git-receive-pack-result', 'cache-control': 'no-cache' },
        });
      }
    }
    if (target.kind === 'api' && method === 'POST' && target.rest === '/releases' && body && !isDraft(body))
      return refuse(c, run, 403, 'a release through the gateway must be a draft (publishing one makes its tag)');

    const headers = new Headers();
    for (const [name, value] of c.req.raw.headers) {
      if (!/^(host|authorization|cookie|content-length|connection|keep-alive|transfer-encoding|x-forwarded-.*)$/i.test(name)) {
        headers.set(name, value);
      }
    }
    headers.set(
      'authorization',
      target.kind === 'git' ? `Basic ${Buffer.from(`${token}:x-oauth-basic`).toString('base64')}` : `token ${token}`,
    );
    const url = `${target.kind === 'git' ? gitBase : forge}${path}${new URL(c.req.url).search.replace(/([?&])(access_)?token=[^&]*/gi, '$1')}`;
    let answer: Response;
    try {
      answer = await doFetch(url, { method, headers, body, redirect: 'manual' });
    } catch (err) {
      deps.logger.warn({ runId: run.id, err: (err as Error).message }, 'forge gateway: the forge is unreachable');
      return c.json({ message: 'the forge is unreachable from baton' }, 502);
    }
    return relay(answer, token);
  });

  /** A refusal: the agent gets the reason, and so does the run's log. */
  async function refuse(c: Context, run: Run, status: 401 | 403 | 413, reason: string) {
    deps.logger.info({ runId: run.id, status, reason }, 'forge gateway refused a request');
    await deps.engine.appendProgress(run.id, { lines: [`[gateway] refused: ${reason}`] }).catch(() => {});
    return c.json({ message: `baton's forge gateway refused this: ${reason}` }, status);
  }

  /**
   * Pushes go to the run's own branches: never the default branch, a protected one or a tag, and
   * only a branch its stage's rules name (deleting one included).
   */
  async function pushProblem(body: Uint8Array, run: Run, token: string, rights: RunRights): Promise<string | null> {
    const read = readRefUpdates(body);
    if ('error' in read) return `a push the gateway cannot read (${read.error})`;
    const api = `${forge}/api/v1/repos/${encodeURIComponent(run.owner)}/${encodeURIComponent(run.repo)}`;
    const auth = { authorization: `token ${token}` };
    const info = await doFetch(api, { headers: auth });
    if (!info.ok) return `the forge did not say what the default branch is (${info.status})`;
    const defaultBranch = ((await info.json()) as { default_branch?: string }).default_branch ?? '';
    for (const { ref } of read.updates) {
      if (!ref.startsWith('refs/heads/')) return `a push to ${ref} (only branches may be pushed)`;
      const branch = ref.slice('refs/heads/'.length);
      if (branch === defaultBranch) return `a push to the default branch ${branch}`;
      const found = await doFetch(`${api}/branches/${encodeURIComponent(branch)}`, { headers: auth });
      if (found.ok && ((await found.json()) as { protected?: boolean }).protected === true)
        return `a push to the protected branch ${branch}`;
      const head = await headRefOf(run, api, auth, rights);
      if (!branchAllowed(branch, rights.push, run, head))
        return `a push to ${branch}: the ${run.stage} stage may push only ${describeRules(rights.push, run, head)} (pipeline.stages.${run.stage}.push)`;
    }
    return null;
  }

  /** The head branch of a run on a pull request, from its payload or else the forge. */
  async function headRefOf(run: Run, api: string, auth: Record<string, string>, rights: RunRights): Promise<string | undefined> {
    if (run.payload.isPull !== true || run.number === null || !rights.push.includes('head')) return undefined;
    if (typeof run.payload.headRef === 'string') return run.payload.headRef;
    const pull = await doFetch(`${api}/pulls/${run.number}`, { headers: auth });
    if (!pull.ok) return undefined;
    return ((await pull.json()) as { head?: { ref?: string } }).head?.ref;
  }

  return app;
}

/** What a path is: the run's repository through the API or git, a global read, or nothing allowed. */
function targetOf(path: string, service: string | undefined, run: Run): Target | null {
  if (GLOBAL_READS.has(path)) return { kind: 'global' };
  const same = (owner: string, repo: string) =>
    owner.toLowerCase() === run.owner.toLowerCase() && repo.toLowerCase() === run.repo.toLowerCase();
  const api = /^\/api\/v1\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
  if (api) return same(decodeURIComponent(api[1]!), decodeURIComponent(api[2]!)) ? { kind: 'api', rest: api[3] ?? '' } : null;
  const git = /^\/([^/]+)\/([^/]+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(path);
  if (!git || !same(git[1]!, git[2]!)) return null;
  if (git[3] === 'info/refs')
    return service === 'git-upload-pack' || service === 'git-receive-pack' ? { kind: 'git', service: 'info' } : null;
  return { kind: 'git', service: git[3] === 'git-upload-pack' ? 'upload' : 'receive' };
}

/** The capability from `Authorization` (token, Bearer or Basic, as git and tea send it) or `?token=`. */
function credentialOf(c: Context): string | undefined {
  const header = c.req.header('authorization')?.trim() ?? '';
  const scheme = /^(token|bearer)\s+(\S+)$/i.exec(header);
  if (scheme) return scheme[2];
  const basic = /^basic\s+(\S+)$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const [user, password] = colon < 0 ? [decoded, ''] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
    return password.startsWith('bgw_') ? password : user;
  }
  return c.req.query('token') ?? c.req.query('access_token') ?? undefined;
}

/** Whether a release request's JSON body asks for a draft. */
function isDraft(body: Uint8Array): boolean {
  try {
    return (JSON.parse(Buffer.from(body).toString('utf8')) as { draft?: unknown }).draft === true;
  } catch {
    return false;
  }
}

/** The forge's answer, with the bot's token taken out of any text it might echo. */
async function relay(answer: Response, token: string): Promise<Response> {
  const headers = new Headers();
  for (const [name, value] of answer.headers) {
    if (!/^(content-length|content-encoding|transfer-encoding|connection|set-cookie)$/i.test(name))
      headers.set(name, value.split(token).join('[redacted]'));
  }
  const type = answer.headers.get('content-type') ?? '';
  if (/json|text|html|xml/i.test(type)) {
    const text = (await answer.text()).split(token).join('[redacted]');
    return new Response(text, { status: answer.status, headers });
  }
  return new Response(answer.body, { status: answer.status, headers });
}
