import { describe, expect, it } from 'vitest';
import { createCallbackClient, createProgressReporter, deriveProgressUrl, type UndeliveredCompletion } from './callback-client.js';
import type { ProgressBody } from '../runner-contract/index.js';

const completion = { status: 'succeeded' as const, exitCode: 0, summary: 'ok', usage: null, costUsd: null, durationMs: 1 };

function fakeFetch(statuses: (number | Error)[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fn = (async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), init: init ?? {} });
    const next = statuses.length > 1 ? statuses.shift()! : statuses[0]!;
    if (next instanceof Error) throw next;
    return new Response(null, { status: next });
  }) as typeof fetch;
  return { fn, calls };
}

describe('completion callback', () => {
  it('retries 5xx and network errors with doubling delays until a 2xx', async () => {
    const { fn, calls } = fakeFetch([500, new TypeError('fetch failed'), 503, 200]);
    const delays: number[] = [];
    const client = createCallbackClient({
      callbackUrl: 'http://baton/api/runs/3/complete',
      token: 'tok',
      fetch: fn,
      sleep: async (ms) => void delays.push(ms),
    });
    const result = await client.complete(completion);
    expect(result).toEqual({ delivered: true, attempts: 4, lastStatus: 200 });
    expect(delays).toEqual([1_000, 2_000, 4_000]);
    expect(new Headers(calls[0]!.init.headers).get('authorization')).toBe('Bearer tok');
    expect(JSON.parse(String(calls[0]!.init.body))).toEqual(completion);
  });

  it.each([401, 403, 404])('retries a refusal (%i): the server may be recovering and know the token again', async (status) => {
    const { fn, calls } = fakeFetch([status, status, 200]);
    const lines: string[] = [];
    const client = createCallbackClient({
      callbackUrl: 'http://baton/api/runs/3/complete',
      token: 'tok',
      fetch: fn,
      log: (l) => lines.push(l),
      sleep: async () => {},
      onUndelivered: () => expect.unreachable('delivered in the end'),
    });
    expect(await client.complete(completion)).toMatchObject({ delivered: true, attempts: 3, lastStatus: 200 });
    expect(calls).toHaveLength(3);
    expect(lines.join('\n')).toContain(`HTTP ${status}`);
  });

  it('never drops a result silently: a refusal that lasts past the budget is recorded loudly', async () => {
    let clock = 0;
    const { fn } = fakeFetch([401]);
    const lines: string[] = [];
    const records: UndeliveredCompletion[] = [];
    const client = createCallbackClient({
      callbackUrl: 'http://baton/api/runs/3/complete',
      token: 'tok',
      fetch: fn,
      log: (l) => lines.push(l),
      now: () => clock,
      sleep: async (ms) => void (clock += ms),
      maxRetryMs: 10_000,
      onUndelivered: (record) => records.push(record),
    });
    expect(await client.complete(completion)).toMatchObject({ delivered: false, attempts: 4, lastStatus: 401 });
    expect(records).toEqual([
      {
        body: completion,
        attempts: 4,
        lastStatus: 401,
        problem: 'HTTP 401: the callback token was not accepted',
        firstAttemptAt: 0,
        lastAttemptAt: 7_000,
      },
    ]);
    expect(lines.at(-1)).toMatch(/^\[baton\] ERROR: the completion callback was not delivered \(HTTP 401/);
  });

  it('stops at once when the server refuses the body itself (400), and records it', async () => {
    const { fn, calls } = fakeFetch([400]);
    const records: UndeliveredCompletion[] = [];
    const client = createCallbackClient({
      callbackUrl: 'http://baton/api/runs/3/complete',
      token: 'tok',
      fetch: fn,
      sleep: async () => {},
      onUndelivered: (record) => records.push(record),
    });
    expect(await client.complete(completion)).toMatchObject({ delivered: false, attempts: 1, lastStatus: 400 });
    expect(calls).toHaveLength(1);
    expect(records).toHaveLength(1);
  });

  it('gives up when the next delay would pass the retry budget', async () => {
    let clock = 0;
    const { fn, calls } = fakeFetch([500]);
    const client = createCallbackClient({
      callbackUrl: 'http://baton/api/runs/3/complete',
      token: 'tok',
      fetch: fn,
      now: () => clock,
      sleep: async (ms) => void (clock += ms),
      maxRetryMs: 60_000,
      retryMaxDelayMs: 16_000,
    });
    expect(await client.complete(completion)).toMatchObject({ delivered: false });
    // Waits of 1+2+4+8+16+16 s = 47 s; another 16 s would end past the 60 s budget.
    expect(calls).toHaveLength(7);
  });
});

describe('progress URL', () => {
  it('replaces the trailing /complete', () => {
    expect(deriveProgressUrl('http://h:3000/api/runs/42/complete')).toBe('http://h:3000/api/runs/42/progress');
    expect(deriveProgressUrl('https://h/base/api/runs/1/complete/')).toBe('https://h/base/api/runs/1/progress');
  });
});

describe('progress reporter', () => {
  it('batches lines, caps batch size and line length, and sends usage once changed', async () => {
    const sent: ProgressBody[] = [];
    const reporter = createProgressReporter({
      send: async (body) => {
        sent.push(body);
        return true;
      },
      intervalMs: 60_000,
      maxLines: 1_000,
      maxBatch: 3,
      maxLineLength: 5,
    });
    for (const line of ['a', 'b', 'c', 'd', '0123456789']) reporter.add(line);
    reporter.setUsage({ inputTokens: 1, outputTokens: 2, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 }, 0.5);
    await reporter.close();
    expect(sent.map((b) => b.lines)).toEqual([
      ['a', 'b', 'c'],
      ['d', '01234…'],
    ]);
    expect(sent[0]!.usage).toMatchObject({ inputTokens: 1 });
    expect(sent[0]!.costUsd).toBe(0.5);
    expect(sent[1]!.usage).toBeUndefined();
  });

  it('sends the prompt once, with the next batch', async () => {
    const sent: ProgressBody[] = [];
    const reporter = createProgressReporter({
      send: async (body) => {
        sent.push(body);
        return true;
      },
      intervalMs: 60_000,
    });
    const prompt = { text: 'Do issue 7', arguments: '7', source: 'built-in' as const, file: 'develop', model: null };
    reporter.setPrompt(prompt);
    await reporter.flush();
    reporter.add('after');
    await reporter.close();
    expect(sent).toEqual([{ lines: [], prompt }, { lines: ['after'] }]);
  });

  it('drops the oldest lines while the server is unreachable and says how many', async () => {
    const sent: ProgressBody[] = [];
    let up = false;
    const reporter = createProgressReporter({
      send: async (body) => {
        if (up) sent.push(body);
        return up;
      },
      intervalMs: 60_000,
      maxLines: 1_000,
      maxBuffered: 2,
    });
    for (const line of ['1', '2', '3', '4']) reporter.add(line);
    up = true;
    await reporter.close();
    expect(sent[0]!.lines).toEqual(['[baton] 2 log lines were not sent (see the full log)', '3', '4']);
  });

  it('bounds what waits by characters too, keeping the newest lines', async () => {
    const sent: ProgressBody[] = [];
    let up = false;
    const reporter = createProgressReporter({
      send: async (body) => {
        if (up) sent.push(body);
        return up;
      },
      intervalMs: 60_000,
      maxLines: 1_000_000,
      maxBuffered: 1_000_000,
      maxBufferedChars: 10,
    });
    for (const line of ['aaaa', 'bbbb', 'cccc', 'dddd']) reporter.add(line);
    up = true;
    await reporter.close();
    expect(sent.flatMap((b) => b.lines)).toEqual(['[baton] 2 log lines were not sent (see the full log)', 'cccc', 'dddd']);
  });
});
