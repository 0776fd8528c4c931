import { describe, expect, it } from 'vitest';
import { createTranscriptClient } from './conversation.js';

/** A clock the client's sleeps move, and a fetch that fails while `down(t)` says the server is away. */
function world(down: (t: number) => boolean, answer: () => Response) {
  let t = 0;
  const calls: { at: number; method: string }[] = [];
  const lines: string[] = [];
  const fetch = (async (_url: string | URL | Request, init?: RequestInit) => {
    calls.push({ at: t, method: init?.method ?? 'GET' });
    if (down(t)) throw new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
    return answer();
  }) as typeof globalThis.fetch;
  const client = createTranscriptClient({
    callbackUrl: 'http://baton.internal/api/runs/7/complete',
    token: 'tok',
    fetch,
    now: () => t,
    sleep: async (ms) => void (t += ms),
    log: (line) => lines.push(line),
  });
  return { client, calls, lines, elapsed: () => t };
}

describe('the transcript client', () => {
  it('rides out a server away for longer than a few retries (a restart under load) when resuming', async () => {
    // Away for 40 s: a budget of five quick tries (15 s) ended the resumed turn as failed.
    const w = world(
      (t) => t < 40_000,
      () => new Response('{"format":"baton-transcript"}\n', { status: 200 }),
    );
    const jsonl = await w.client.download();
    expect(jsonl?.toString()).toContain('baton-transcript');
    expect(w.elapsed()).toBeGreaterThanOrEqual(40_000);
    // Doubling delays, each at most 30 s: the server is asked again soon after it is back.
    expect(w.elapsed()).toBeLessThan(40_000 + 30_000);
    expect(w.lines.join('\n')).toContain('reading the transcript failed (fetch failed); retrying');
  });

  it('keeps a question’s transcript through the same outage', async () => {
    const w = world(
      (t) => t < 40_000,
      () => new Response('{}', { status: 200 }),
    );
    expect(await w.client.upload(Buffer.from('{}\n'))).toBe(true);
    expect(w.calls.at(-1)).toMatchObject({ method: 'PUT' });
  });

  it('gives up once the completion’s budget (15 min) is spent, and says so', async () => {
    const w = world(
      () => true,
      () => new Response(null, { status: 200 }),
    );
    await expect(w.client.download()).rejects.toThrow('the server could not be asked for the transcript');
    expect(w.elapsed()).toBeLessThanOrEqual(15 * 60_000);
    expect(w.elapsed()).toBeGreaterThan(14 * 60_000);
    expect(w.lines.at(-1)).toMatch(/^\[baton\] reading the transcript failed after \d+ attempts: fetch failed$/);
  });

  it('tries a run’s only turn as often as it is told, and takes a refusal (4xx) at once', async () => {
    const away = world(
      () => true,
      () => new Response(null, { status: 200 }),
    );
    expect(await away.client.upload(Buffer.from('{}\n'), { attempts: 2 })).toBe(false);
    expect(away.calls).toHaveLength(2);
    const refused = world(
      () => false,
      () => new Response('run 7 is succeeded', { status: 409 }),
    );
    expect(await refused.client.upload(Buffer.from('{}\n'))).toBe(false);
    expect(refused.calls).toHaveLength(1);
    expect(refused.lines.at(-1)).toContain('HTTP 409 run 7 is succeeded');
  });
});
