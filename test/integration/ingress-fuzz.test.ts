import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody, WEBHOOK_ROUTES } from '../../src/ingress/index.js';
import { OWN_FIXTURES_DIR, giteaHeaders } from '../helpers/gitea-webhook.js';
import { until } from '../helpers/until.js';
import { createIngressHarness, type IngressHarness } from '../helpers/ingress.js';
import { referencePath } from '../helpers/reference.js';

/**
 * Whatever arrives, every endpoint answers 2xx or 4xx with a JSON body and never throws: mutated
 * real payloads (fields dropped, replaced, retyped), correctly signed so they get past the
 * signature check into normalisation and routing, plus random bytes.
 */
const SECRET = 'fuzz-secret';
const PATHS = WEBHOOK_ROUTES.map((r) => r.path);
const EVENTS: [string, string | undefined][] = [
  ['issues', 'issues'],
  ['issues', 'issue_label'],
  ['issues', 'issue_assign'],
  ['issue_comment', 'issue_comment'],
  ['issue_comment', 'pull_request_comment'],
  ['pull_request', 'pull_request'],
  ['pull_request', 'pull_request_sync'],
  ['pull_request', 'pull_request_label'],
  ['pull_request_approved', 'pull_request_review_approved'],
  ['pull_request_rejected', 'pull_request_review_rejected'],
  ['pull_request_comment', 'pull_request_review_comment'],
  ['pull_request_comment', undefined],
  ['push', 'push'],
  ['release', 'release'],
  ['create', 'create'],
  ['', ''],
];

function loadBases(): Record<string, unknown>[] {
  // The real payloads are extra seeds when present; the reference suites (ingress-gitea-payloads)
  // are the ones that fail under CI or skip visibly without them.
  const payloads = referencePath('gitea/payloads');
  const dirs = [OWN_FIXTURES_DIR, ...(fs.existsSync(payloads) ? [payloads] : [])];
  return dirs.flatMap((dir) =>
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Record<string, unknown>),
  );
}

type Path = (string | number)[];

function pathsOf(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      const p = [...prefix, Array.isArray(value) ? Number(key) : key];
      out.push(p);
      pathsOf(child, p, out);
    }
  }
  return out;
}

type Mutation = { at: number; op: 'delete' } | { at: number; op: 'replace'; value: unknown };

function mutate(base: Record<string, unknown>, mutations: Mutation[]): unknown {
  const copy = structuredClone(base) as Record<string, unknown>;
  for (const m of mutations) {
    const paths = pathsOf(copy);
    if (paths.length === 0) break;
    const target = paths[m.at % paths.length]!;
    let parent: Record<string | number, unknown> = copy;
    for (const key of target.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    const last = target[target.length - 1]!;
    if (m.op === 'delete') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else parent[last] = m.value;
  }
  return copy;
}

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ at: fc.nat(), op: fc.constant('delete' as const) }),
  fc.record({
    at: fc.nat(),
    op: fc.constant('replace' as const),
    value: fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.constantFrom(null, '', 0, -1, 1.5, true, [], {}, 'closed', 'open', 'reviewed', 'label_updated', 'claude-dev', 2 ** 53),
    ),
  }),
);

describe('ingress under fuzzed input', () => {
  let h: IngressHarness;
  const bases = loadBases();

  beforeAll(async () => {
    h = await createIngressHarness({ secret: SECRET, webhooks: { maxBodyBytes: 64 * 1024 } });
    // One delivery through first: the worker, which outlives each test, has armed its wait by then.
    const body = fs.readFileSync(path.join(OWN_FIXTURES_DIR, 'issues-opened.json'));
    await h.post('/webhook/gitea', body, giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }));
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  async function send(path: string, body: Uint8Array, headers: Record<string, string>, minStatus = 200): Promise<string> {
    const res = await h.app.request(path, { method: 'POST', body, headers });
    const text = await res.text();
    expect(res.status, text).toBeGreaterThanOrEqual(minStatus);
    expect(res.status, text).toBeLessThan(500);
    const parsed = JSON.parse(text) as { ok: boolean; id?: number };
    if (res.status >= 400) expect(parsed).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
    else expect(parsed).toEqual({ ok: true, id: expect.any(Number) });
    return String(res.status);
  }

  /** Waits until the worker has given every stored delivery a verdict; returns the outcomes seen. */
  async function allProcessed(): Promise<Set<string>> {
    await until(async () => {
      const counts = await h.processing.inbox.counts();
      return counts.pending + counts.processing === 0;
    }, 'every accepted delivery processed');
    const outcomes = new Set<string>();
    let before: number | undefined;
    for (;;) {
      const page = await h.processing.inbox.list({ before, limit: 500 });
      for (const d of page.deliveries) outcomes.add(d.outcome ?? 'none');
      if (page.nextCursor === null) return outcomes;
      before = page.nextCursor;
    }
  }

  it('answers mutated, correctly signed payloads with 2xx/4xx on every endpoint', async () => {
    const outcomes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: bases.length - 1 }),
        fc.array(mutationArb, { minLength: 1, maxLength: 6 }),
        fc.constantFrom(...PATHS),
        fc.constantFrom(...EVENTS),
        fc.boolean(),
        async (baseIndex, mutations, path, [event, eventType], forgejo) => {
          const body = Buffer.from(JSON.stringify(mutate(bases[baseIndex]!, mutations), null, 2));
          outcomes.add(await send(path, body, giteaHeaders(body, { event, eventType, secret: SECRET, forgejo })));
        },
      ),
      { numRuns: 400 },
    );
    // The mutations must reach normalisation and routing, not just bounce off the first check,
    // and the worker gives each stored one a verdict without stopping on any.
    expect([...outcomes]).toEqual(expect.arrayContaining(['202', '400']));
    expect([...(await allProcessed())]).toEqual(expect.arrayContaining(['started', 'ignored', 'invalid']));
  });

  it('answers random bytes, random content types and random signatures with 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 4096 }),
          fc.string({ unit: 'binary', maxLength: 512 }).map((s) => Buffer.from(s)),
        ),
        fc.constantFrom(...PATHS),
        fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain', '', 'application/json; charset=utf-8'),
        fc.constantFrom('good', 'bad', 'none', 'garbage'),
        async (body, path, contentType, signature) => {
          const headers: Record<string, string> = { 'X-Gitea-Event': 'issues', 'X-Gitea-Event-Type': 'issues' };
          if (contentType) headers['Content-Type'] = contentType;
          if (signature === 'good') headers['X-Gitea-Signature'] = signBody(body, SECRET);
          if (signature === 'bad') headers['X-Gitea-Signature'] = signBody(body, 'wrong');
          if (signature === 'garbage') headers['X-Hub-Signature-256'] = 'sha256=zz' + Buffer.from(body).toString('base64').slice(0, 30);
          await send(path, body, headers, 400);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('answers random JSON documents with 2xx/4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue({ maxDepth: 4 }),
        fc.constantFrom(...EVENTS),
        fc.constantFrom(...PATHS),
        async (value, [event, eventType], path) => {
          const body = Buffer.from(JSON.stringify(value) ?? 'null');
          await send(path, body, giteaHeaders(body, { event, eventType, secret: SECRET }));
        },
      ),
      { numRuns: 300 },
    );
    await allProcessed();
  });

  it('answers hostile headers (huge or odd delivery ids, odd event names) with 2xx/4xx', async () => {
    const body = fs.readFileSync(path.join(OWN_FIXTURES_DIR, 'issues-opened.json'));
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 300 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
        fc.string({ maxLength: 60 }).filter((s) => /^[\x21-\x7e]*$/.test(s)),
        async (delivery, event) => {
          const headers = giteaHeaders(body, { event: event || 'issues', eventType: event || undefined, secret: SECRET });
          headers['X-Gitea-Delivery'] = delivery;
          await send('/webhook/gitea', body, headers);
        },
      ),
      { numRuns: 200 },
    );
    await allProcessed();
  });
});
