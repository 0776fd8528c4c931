import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import { checkSection } from '../../src/config-schema/index.js';
import { createRunEngine, createRunQueries, runLogSection, type RunService, type RunEvent, type RunQueries } from '../../src/runs/index.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

const MAX_BYTES = 64 * 1024;

describe.each(STORE_KINDS)('stored run log on $kind', ({ kind, create }) => {
  let t: TestStore;
  let engine: RunService;
  let runs: RunQueries;
  let runId: number;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    engine = createRunEngine({ store: t.store, queue: { ...DEFAULTS.queue }, runLog: { maxBytes: MAX_BYTES } });
    runs = createRunQueries({ store: t.store, concurrency: DEFAULTS.queue.concurrency });
    ({
      run: { id: runId },
    } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 }));
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  const progress = async () => (await runs.events(runId)).filter((e) => e.type === 'run:progress');
  const storedBytes = async () => (await progress()).reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e.data)), 0);
  const logOf = (events: RunEvent[]) => events.flatMap((e) => (e.data?.lines as string[] | undefined) ?? []);
  const batch = (from: number, count: number, width = 100) =>
    Array.from({ length: count }, (_, i) => `line ${String(from + i).padStart(6, '0')} ${'x'.repeat(width)}`);

  it('keeps everything while the log fits', async () => {
    await engine.appendProgress(runId, { lines: batch(0, 50) });
    await engine.appendProgress(runId, { lines: batch(50, 50), usage: { inputTokens: 5 }, costUsd: 0.1 });
    const events = await progress();
    expect(logOf(events)).toEqual(batch(0, 100));
    expect(events[1]!.data).toMatchObject({ usage: { inputTokens: 5 }, costUsd: 0.1 });
  });

  it('keeps the head and the tail of a long log within the limit, with one marker saying what was cut', async () => {
    // 200 batches of 200 lines (~4.5 MB): far over the 64 KiB limit.
    for (let b = 0; b < 200; b++) await engine.appendProgress(runId, { lines: batch(b * 200, 200) });
    expect(await storedBytes()).toBeLessThanOrEqual(MAX_BYTES);

    const log = logOf(await progress());
    const markers = log.filter((l) => l.includes('of output are not stored here'));
    expect(markers).toHaveLength(1);
    const at = log.indexOf(markers[0]!);
    const head = log.slice(0, at);
    const tail = log.slice(at + 1);
    // The head is the very beginning, the tail the very end, each complete in itself.
    expect(head).toEqual(batch(0, head.length));
    expect(tail).toEqual(batch(40_000 - tail.length, tail.length));
    expect(head.length).toBeGreaterThan(100);
    expect(tail.length).toBeGreaterThan(100);
    const cutLines = 40_000 - head.length - tail.length;
    expect(markers[0]).toMatch(
      new RegExp(`^\\[baton\\] … ${cutLines.toLocaleString('en-US')} lines \\([\\d.]+ MiB\\) of output are not stored here`),
    );
    const marker = (await progress()).find((e) => e.data?.cut);
    expect(marker?.data?.cut).toMatchObject({ lines: cutLines });
  });

  it('stores the last lines of a single batch larger than half the limit', async () => {
    await engine.appendProgress(runId, { lines: batch(0, 1_000, 200) });
    expect(await storedBytes()).toBeLessThanOrEqual(MAX_BYTES / 2);
    const log = logOf(await progress());
    expect(log[0]).toMatch(/^\[baton\] … [\d,]+ lines \([\d.]+ KiB\) of this batch are not stored here/);
    expect(log.slice(1)).toEqual(batch(1_000 - (log.length - 1), log.length - 1, 200));
  });

  it('drops usage-only batches from the tail like any other', async () => {
    // ~600 bytes each: per-model counters make usage batches that big.
    const usage = (b: number) => ({
      inputTokens: b,
      ...Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`model${i}Tokens`, 1_000_000 + i])),
    });
    for (let b = 0; b < 300; b++) await engine.appendProgress(runId, { lines: [], usage: usage(b) });
    expect(await storedBytes()).toBeLessThanOrEqual(MAX_BYTES);
    const events = await progress();
    expect(events.length).toBeLessThan(300);
    expect(events.at(-1)!.data).toMatchObject({ usage: { inputTokens: 299 } });
    expect(events[0]!.data).toMatchObject({ usage: { inputTokens: 0 } });
  });
});

describe('runLog settings', () => {
  it('defaults to 2 MiB and names a bad value', () => {
    expect(checkSection(runLogSection, 'runLog', undefined, {})).toMatchObject({ value: { maxBytes: 2 * 1024 * 1024 }, problems: [] });
    expect(checkSection(runLogSection, 'runLog', { maxBytes: 1_000_000 }, {}).value).toEqual({ maxBytes: 1_000_000 });
    expect(checkSection(runLogSection, 'runLog', { maxBytes: 100, colour: 1 }, {}).problems).toEqual([
      expect.stringContaining('runLog.colour'),
      'runLog.maxBytes must be a whole number >= 65536, got "100"',
    ]);
  });
});
