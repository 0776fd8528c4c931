import { Hono, type Context } from 'hono';
import type { Logger } from '../log/index.js';
import type { CallbackTokenChecks, RunService, Run } from '../runs/index.js';
import { macMatches, parseCapability } from './capability.js';
import { REVIEW_CHANGES, type ForgeDialect, type Target } from './dialect.js';
import { readRefUpdates, refusedPushReport } from './pkt-line.js';
import {
  branchAllowed,
  changeProblem,
  commentEditProblem,
  DEFAULT_RIGHTS,
  describeRules,
  readChangeBody,
  readProblem,
  reviewerStateProblem,
  writeQueryProblem,
  type ChangeContext,
  type RunRights,
} from './rights.js';

/** Where the gateway lives on baton's HTTP app: the forge URL of a run is `<baton>/gateway`. */
export const GATEWAY_PREFIX = '/gateway';
/** Largest request the gateway passes on (a push of a big change); more gets 413. */
const MAX_BODY_BYTES = 256 * 1024 * 1024;
/** A run's capability is good while the run can still be working. */
const LIVE = new Set(['queued', 'provisioning', 'running']);
/** Request headers never passed on: the agent's credentials (every forge's spelling), hop-by-hop ones. */
const DROPPED_HEADERS =
  /^(host|authorization|private-token|job-token|cookie|content-length|connection|keep-alive|transfer-encoding|x-forwarded-.*)$/i;
/** Query parameters that carry a credential on some forge (Gitea's `token`, GitLab's `private_token`). */
const CREDENTIAL_QUERY = /([?&])((access_|private_|job_)?token)=[^&]*/gi;

/**
 * A bot's real credential on a forge: its token, or (a GitHub App) the token minted for the
 * run's repository alone when a request needs it.
 */
export type GatewayToken =
  | string
  | {
      tokenFor(owner: string, repo: string): Promise<string>;
      /** The forge refused the token (401): the next request gets a new one. */
      forget(owner: string, repo: string): void;
    };

/** One forge the gateway serves: how to speak to it and the bots' real tokens there. */
export interface GatewayForge {
  dialect: ForgeDialect;
  tokens: { dev?: GatewayToken; review?: GatewayToken };
}

export interface ForgeGatewayDeps {
  /** The forges runs reach through the gateway, by the run's forge (a Forgejo run is served as `gitea`). */
  forges: Partial<Record<'gitea' | 'github' | 'gitlab', GatewayForge>>;
  /** Which live run a capability was derived from (its callback token hashes). */
  callbackTokens: Pick<CallbackTokenChecks, 'verifyByTokenHash'>;
  /** Where a refusal is written: the run's log. */
  engine: Pick<RunService, 'appendProgress'>;
  logger: Pick<Logger, 'warn' | 'info'>;
  /** What the run's stage may push and whether it may merge (`pipeline.stages.<name>.push`, `.merge`). @default DEFAULT_RIGHTS */
  rightsOf?: (run: Run) => RunRights;
  fetch?: typeof fetch;
}

/** What one request is about, once the capability is known good. */
interface Exchange {
  run: Run;
  forge: GatewayForge;
  target: Target & { kind: 'global' | 'api' | 'git' };
  token: string;
  source: GatewayToken;
  review: boolean;
  method: string;
  path: string;
}

/**
 * The forge gateway: the agent's only door to its forge (Gitea or Forgejo, GitHub, GitLab). It
 * accepts a run's capability (never the bot's token) only while the run is live and only for the
 * run's repository, its API paths and git smart HTTP, swaps it for the bot's token of the run's
 * forge on the way out, never answers with that token, refuses pushes to the default or a
 * protected branch and API changes other than the work the prompts do (the review account's
 * other than comments, reviews and labels), and writes each refusal into the run's log.
 */
export function forgeGatewayRoutes(deps: ForgeGatewayDeps): Hono {
  const app = new Hono();
  const doFetch = deps.fetch ?? fetch;
  /** The numeric id of each live run's repository, asked once (GitHub's and GitLab's id-addressed paths). */
  const repositoryIds = new Map<number, Promise<string | null>>();

  app.all(`${GATEWAY_PREFIX}/*`, async (c) => {
    const path = c.req.path.slice(GATEWAY_PREFIX.length) || '/';
    const presented = credentialOf(c);
    const capability = presented ? parseCapability(presented) : null;
    const run = capability
      ? await deps.callbackTokens.verifyByTokenHash(capability.runId, (hash) => macMatches(capability.runId, hash, capability.mac))
      : null;
    if (!run) {
      c.header('WWW-Authenticate', 'Basic realm="baton forge gateway"');
      return c.json(
        { message: 'the forge gateway needs the run capability baton gave this run (GITEA_TOKEN, GH_TOKEN or GITLAB_TOKEN)' },
        401,
      );
    }
    if (!LIVE.has(run.status)) {
      repositoryIds.delete(run.id);
      return refuse(c, run, 401, `the run is ${run.status}: its capability is no longer accepted`);
    }
    const forge = deps.forges[run.forge === 'github' || run.forge === 'gitlab' ? run.forge : 'gitea'];
    if (!forge) return refuse(c, run, 403, `baton's forge gateway does not serve ${run.forge ?? 'gitea'} (its URL is not configured)`);
    const target = forge.dialect.targetOf(path, c.req.query('service'), run);
    if (target?.kind === 'refused') return refuse(c, run, 403, target.reason);
    if (!target)
      return refuse(c, run, 403, `${c.req.method} ${path.slice(0, 160)} is outside this run's repository ${run.owner}/${run.repo}`);
    const review = run.payload.account === 'review';
    const source = review ? forge.tokens.review : forge.tokens.dev;
    if (!source) return refuse(c, run, 403, `no ${review ? 'review' : 'dev'} bot token is configured for ${forge.dialect.name}`);
    let token: string;
    try {
      token = typeof source === 'string' ? source : await source.tokenFor(run.owner, run.repo);
    } catch (err) {
      const reason = `no ${forge.dialect.name} token for ${run.owner}/${run.repo}: ${err instanceof Error ? err.message : String(err)}`;
      deps.logger.warn({ runId: run.id, reason }, 'forge gateway could not get a token');
      await deps.engine.appendProgress(run.id, { lines: [`[gateway] ${reason}`] }).catch(() => {});
      return c.json({ message: `baton's forge gateway has ${reason}` }, 502);
    }
    const exchange: Exchange = { run, forge, target, token, source, review, method: c.req.method.toUpperCase(), path };
    if (target.kind === 'api' && target.byId !== undefined && (await repositoryIdOf(exchange)) !== target.byId)
      return refuse(
        c,
        run,
        403,
        `${exchange.method} ${path.slice(0, 160)} names a repository by an id that is not ${run.owner}/${run.repo}'s`,
      );
    const problem = rightsProblem(exchange, c.req.query('service'));
    if (problem) return refuse(c, run, 403, problem);

    const length = Number(c.req.header('content-length') ?? 0);
    if (length > MAX_BODY_BYTES) return refuse(c, run, 413, `a request of ${length} bytes is over the gateway's limit`);
    const reading = exchange.method === 'GET' || exchange.method === 'HEAD';
    const body = reading ? undefined : new Uint8Array(await c.req.arrayBuffer());
    if (body && body.byteLength > MAX_BODY_BYTES) return refuse(c, run, 413, "the request is over the gateway's limit");
    if (target.kind === 'git' && target.service === 'receive' && body) {
      const refused = await refusedPush(c, exchange, body);
      if (refused) return refused;
    }
    if (target.kind === 'api' && body) {
      const bodyProblem = changeBodyProblem(exchange, new URL(c.req.url).searchParams, body);
      if (bodyProblem) return refuse(c, run, 403, bodyProblem);
      const verdictOn = forge.dialect.reviewerStateOf?.(exchange.method, target.rest, readChangeBody(body)) ?? null;
      if (verdictOn !== null) {
        const verdictProblem = await reviewerStateTargetProblem(exchange, verdictOn);
        if (verdictProblem) return refuse(c, run, 403, verdictProblem);
      }
      if (forge.dialect.changeOf(exchange.method, target.rest) === 'comment-edit') {
        const authorProblem = await commentAuthorProblem(exchange);
        if (authorProblem) return refuse(c, run, 403, authorProblem);
      }
    }
    return forward(c, exchange, body);
  });

  /**
   * What the run's account and stage may not do: the review account only comments, reviews and labels
   * and never pushes; the dev account changes only what the prompts' work needs; a merge needs
   * the stage's `merge`; a push needs push rules.
   */
  function rightsProblem(x: Exchange, service: string | undefined): string | null {
    const { run, target, method, path } = x;
    const reading = method === 'GET' || method === 'HEAD';
    if (target.kind === 'global') return reading ? null : `${method} ${path} is not allowed through the gateway`;
    if (target.kind === 'api') {
      if (reading) return readProblem(target.rest);
      const change = x.forge.dialect.changeOf(method, target.rest);
      if (x.review && (change === null || !REVIEW_CHANGES.has(change)))
        return `the review account may only comment, review and label; ${method} ${path.slice(0, 160)} refused`;
      if (change === null) return `${method} ${path.slice(0, 160)} is not a change runs may make through the gateway`;
      if (change === 'merge' && !rightsOf(run).merge)
        return `the ${run.stage} stage may not merge pull requests (pipeline.stages.${run.stage}.merge)`;
      return null;
    }
    const pushing = target.service === 'receive' || service === 'git-receive-pack';
    if (!pushing) return null;
    if (x.review) return 'the review account may not push';
    if (rightsOf(run).push.length === 0) return `the ${run.stage} stage may push no branch (pipeline.stages.${run.stage}.push)`;
    return null;
  }

  const rightsOf = (run: Run): RunRights => deps.rightsOf?.(run) ?? DEFAULT_RIGHTS;

  /** What an API write's query and body ask for beyond its path (rights.ts), a release that is not a draft included. */
  function changeBodyProblem(x: Exchange, query: URLSearchParams, body: Uint8Array): string | null {
    const rest = x.target.kind === 'api' ? x.target.rest : '';
    const change = x.forge.dialect.changeOf(x.method, rest);
    if (change === null) return null;
    const json = readChangeBody(body);
    const forge: ChangeContext['forge'] = x.run.forge === 'github' || x.run.forge === 'gitlab' ? x.run.forge : 'gitea';
    const context = { run: x.run, rights: rightsOf(x.run), account: x.review ? ('review' as const) : ('dev' as const), forge, rest };
    return (
      writeQueryProblem(query) ??
      changeProblem(change, json, context) ??
      (change === 'release' ? x.forge.dialect.releaseProblem(json) : null)
    );
  }

  /** A reviewer state set by the run's account on pull request `target` (rights.ts); the head is asked for a run on an issue. */
  async function reviewerStateTargetProblem(x: Exchange, target: number): Promise<string | null> {
    const account = x.review ? ('review' as const) : ('dev' as const);
    let head: string | undefined;
    if (x.review && x.run.payload.isPull !== true) {
      const pull = await doFetch(x.forge.dialect.pullUrl(x.run, target), { headers: x.forge.dialect.apiAuth(x.token) }).catch(() => null);
      head = pull?.ok ? x.forge.dialect.headRefOf(await pull.json().catch(() => null)) : undefined;
    }
    return reviewerStateProblem(target, { run: x.run, account }, head);
  }

  /** Who wrote the comment a change is to (read at the change's own path), against who the bot is. */
  async function commentAuthorProblem(x: Exchange): Promise<string | null> {
    const headers = { ...x.forge.dialect.apiAuth(x.token), 'user-agent': 'baton-forge-gateway' };
    const read = (url: string) =>
      doFetch(url, { headers })
        .then(async (answer) => (answer.ok ? ((await answer.json()) as unknown) : null))
        .catch(() => null);
    const [comment, self] = await Promise.all([
      read(x.forge.dialect.upstreamUrl(x.path, x.target)),
      read(`${x.forge.dialect.apiBase}/user`),
    ]);
    return commentEditProblem(comment, self);
  }

  /** A push the run may not make, refused in git's own words (each ref `! [remote rejected]`), or null. */
  async function refusedPush(c: Context, x: Exchange, body: Uint8Array): Promise<Response | null> {
    const problem = await pushProblem(x, body);
    if (!problem) return null;
    const read = readRefUpdates(body);
    if ('error' in read || read.updates.length === 0) return refuse(c, x.run, 403, problem);
    await refuse(c, x.run, 403, problem);
    return new Response(refusedPushReport(read.updates, read.capabilities, `baton's forge gateway refused this: ${problem}`), {
      status: 200,
      headers: { 'content-type': 'application/x-git-receive-pack-result', 'cache-control': 'no-cache' },
    });
  }

  /**
   * Pushes go to the run's own branches: never the default branch, a protected one or a tag, and
   * only a branch its stage's rules name (deleting one included). The forge is asked with the
   * bot's token; the forge's own protections still apply when the push reaches it.
   */
  async function pushProblem(x: Exchange, body: Uint8Array): Promise<string | null> {
    const { run, forge } = x;
    const read = readRefUpdates(body);
    if ('error' in read) return `a push the gateway cannot read (${read.error})`;
    const auth = forge.dialect.apiAuth(x.token);
    const info = await doFetch(forge.dialect.repositoryUrl(run), { headers: auth });
    if (!info.ok) return `the forge did not say what the default branch is (${info.status})`;
    const defaultBranch = ((await info.json()) as { default_branch?: string }).default_branch ?? '';
    const rights = rightsOf(run);
    for (const { ref } of read.updates) {
      if (!ref.startsWith('refs/heads/')) return `a push to ${ref} (only branches may be pushed)`;
      const branch = ref.slice('refs/heads/'.length);
      if (branch === defaultBranch) return `a push to the default branch ${branch}`;
      const found = await doFetch(forge.dialect.branchUrl(run, branch), { headers: auth });
      if (found.ok && ((await found.json()) as { protected?: boolean }).protected === true)
        return `a push to the protected branch ${branch}`;
      const head = await headRefOf(x, rights);
      if (!branchAllowed(branch, rights.push, run, head))
        return `a push to ${branch}: the ${run.stage} stage may push only ${describeRules(rights.push, run, head)} (pipeline.stages.${run.stage}.push)`;
    }
    return null;
  }

  /** The head branch of a run on a pull request, from its payload or else the forge. */
  async function headRefOf(x: Exchange, rights: RunRights): Promise<string | undefined> {
    const { run, forge } = x;
    if (run.payload.isPull !== true || run.number === null || !rights.push.includes('head')) return undefined;
    if (typeof run.payload.headRef === 'string') return run.payload.headRef;
    const pull = await doFetch(forge.dialect.pullUrl(run, run.number), { headers: forge.dialect.apiAuth(x.token) });
    if (!pull.ok) return undefined;
    return forge.dialect.headRefOf(await pull.json());
  }

  /** The run's repository's numeric id on its forge, asked once per run; null when the forge does not say. */
  function repositoryIdOf(x: Exchange): Promise<string | null> {
    let id = repositoryIds.get(x.run.id);
    if (!id) {
      id = doFetch(x.forge.dialect.repositoryUrl(x.run), { headers: x.forge.dialect.apiAuth(x.token) })
        .then(async (answer) => (answer.ok ? String(((await answer.json()) as { id?: unknown }).id ?? '') || null : null))
        .catch(() => null);
      // Runs end; their ids need not be kept past a few thousand.
      if (repositoryIds.size > 5_000) repositoryIds.clear();
      repositoryIds.set(x.run.id, id);
      void id.then((value) => value === null && repositoryIds.delete(x.run.id));
    }
    return id;
  }

  /** The request, with the bot's token instead of the capability, to the forge; its answer relayed. */
  async function forward(c: Context, x: Exchange, body: Uint8Array | undefined): Promise<Response> {
    const { dialect } = x.forge;
    const headers = new Headers();
    for (const [name, value] of c.req.raw.headers) if (!DROPPED_HEADERS.test(name)) headers.set(name, value);
    if (x.target.kind === 'git') headers.set('authorization', dialect.gitAuth(x.token));
    else for (const [name, value] of Object.entries(dialect.apiAuth(x.token))) headers.set(name, value);
    // An API write's body was checked as JSON (rights.ts): the forge must read it as JSON, never as a form.
    if (x.target.kind === 'api' && body) headers.set('content-type', 'application/json');
    // GitHub refuses a request without a User-Agent; curl and git send one, a bare fetch may not.
    if (!headers.has('user-agent')) headers.set('user-agent', 'baton-forge-gateway');
    const url = `${dialect.upstreamUrl(x.path, x.target)}${new URL(c.req.url).search.replace(CREDENTIAL_QUERY, '$1')}`;
    let answer: Response;
    try {
      answer = await doFetch(url, { method: x.method, headers, body, redirect: 'manual' });
    } catch (err) {
      deps.logger.warn({ runId: x.run.id, err: (err as Error).message }, 'forge gateway: the forge is unreachable');
      return c.json({ message: 'the forge is unreachable from baton' }, 502);
    }
    if (answer.status === 401 && typeof x.source !== 'string') x.source.forget(x.run.owner, x.run.repo);
    return relay(answer, x.token, { from: dialect.apiBase, to: `${GATEWAY_PREFIX}${dialect.apiPrefix}` });
  }

  /** A refusal: the agent gets the reason, and so does the run's log. */
  async function refuse(c: Context, run: Run, status: 401 | 403 | 413, reason: string) {
    deps.logger.info({ runId: run.id, status, reason }, 'forge gateway refused a request');
    await deps.engine.appendProgress(run.id, { lines: [`[gateway] refused: ${reason}`] }).catch(() => {});
    return c.json({ message: `baton's forge gateway refused this: ${reason}` }, status);
  }

  return app;
}

/**
 * The capability from `Authorization` (token, Bearer or Basic, as git, curl, tea, gh and glab send
 * it), GitLab's `PRIVATE-TOKEN`, or `?token=` / `?access_token=` / `?private_token=`. In Basic, the
 * capability may be the user name (Gitea's `<token>:x-oauth-basic`) or the password (GitHub's
 * `x-access-token:<token>`, GitLab's `oauth2:<token>`).
 */
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
  const privateToken = c.req.header('private-token')?.trim();
  if (privateToken) return privateToken;
  return c.req.query('token') ?? c.req.query('access_token') ?? c.req.query('private_token') ?? undefined;
}

/**
 * The forge's answer, with the bot's token taken out of any text it might echo, and links to the
 * forge's API (`Link` pagination) pointed back at the gateway, so a next page is asked here too.
 */
async function relay(answer: Response, token: string, links: { from: string; to: string }): Promise<Response> {
  const headers = new Headers();
  for (const [name, value] of answer.headers) {
    if (/^(content-length|content-encoding|transfer-encoding|connection|set-cookie)$/i.test(name)) continue;
    const clean = value.split(token).join('[redacted]');
    headers.set(name, /^link$/i.test(name) ? clean.split(links.from).join(links.to) : clean);
  }
  const type = answer.headers.get('content-type') ?? '';
  if (/json|text|html|xml/i.test(type)) {
    const text = (await answer.text()).split(token).join('[redacted]');
    return new Response(text, { status: answer.status, headers });
  }
  return new Response(answer.body, { status: answer.status, headers });
}
