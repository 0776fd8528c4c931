import { describe, expect, it } from 'vitest';
import { createCoderClient, type Clock } from './client.js';
import { CoderApiError, CoderPermanentError, CoderUnavailableError } from './errors.js';

const TOKEN = 'session-token-abcdef';
const instant: Clock = { now: () => 0, sleep: async () => {} };

function clientWith(answers: Array<Response | Error>, seen: Request[] = []) {
  return createCoderClient({
    url: 'https://coder.example/',
    token: TOKEN,
    retries: 2,
    clock: instant,
    fetch: async (input, init) => {
      seen.push(new Request(input, init));
      const next = answers.shift();
      if (!next) throw new Error('no more answers');
      if (next instanceof Error) throw next;
      return next;
    },
  });
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

describe('coder client', () => {
  it('sends the session token header to /api/v2 paths', async () => {
    const seen: Request[] = [];
    await clientWith([json(200, { workspaces: [], count: 0 })], seen).listWorkspaces({ q: 'owner:me', limit: 10, offset: 0 });
    expect(seen[0]?.url).toBe('https://coder.example/api/v2/workspaces?q=owner%3Ame&limit=10&offset=0');
    expect(seen[0]?.headers.get('coder-session-token')).toBe(TOKEN);
  });

  it('never puts the token in an error, even when a network error quotes it', async () => {
    const reset = new TypeError('fetch failed', { cause: Object.assign(new Error(`socket closed (${TOKEN})`), { code: 'ECONNRESET' }) });
    const error = await clientWith([reset, reset, reset])
      .getWorkspace('id')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CoderUnavailableError);
    expect((error as Error).message).toContain('ECONNRESET');
    expect((error as Error).message).not.toContain(TOKEN);
  });

  it('retries a proxy’s non-JSON 502 and names its status when retries run out', async () => {
    const bad = () => new Response('<html>Bad Gateway</html>', { status: 502, statusText: 'Bad Gateway' });
    const error = await clientWith([bad(), bad(), bad()])
      .getWorkspace('id')
      .catch((e: unknown) => e);
    expect((error as Error).message).toBe('Coder GET /api/v2/workspaces/id failed: HTTP 502: Bad Gateway (after 3 attempts)');
  });

  it('returns 404 and 410 lookups as null and throws other 4xx as classes', async () => {
    const client = clientWith([
      json(404, { message: 'Resource not found or you do not have access to this resource' }),
      json(410, { message: 'Workspace "x" was deleted' }),
      json(400, { message: 'Validation failed.', validations: [{ field: 'name', detail: 'bad' }] }),
      json(418, { message: 'teapot' }),
    ]);
    expect(await client.getWorkspaceByName('me', 'x')).toBeNull();
    expect(await client.getWorkspace('x')).toBeNull();
    await expect(client.getWorkspace('x')).rejects.toBeInstanceOf(CoderPermanentError);
    await expect(client.getWorkspace('x')).rejects.toBeInstanceOf(CoderApiError);
  });
});
