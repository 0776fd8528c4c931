import { afterEach, describe, expect, it } from 'vitest';
import { errorMessage } from './errors.js';
import { createEvents } from './events.js';
import { createLoop, settleWithin, type Loop } from './loop.js';

/** Records what a loop or emitter logs. */
function recorder() {
  const lines: Array<{ level: 'warn' | 'error'; details: Record<string, unknown>; message: string }> = [];
  return {
    lines,
    warn: (details: object, message: string) => lines.push({ level: 'warn', details: details as Record<string, unknown>, message }),
    error: (details: object, message: string) => lines.push({ level: 'error', details: details as Record<string, unknown>, message }),
  };
}

/** A promise the test resolves from a step, to wait on "the loop got here" without sleeping. */
function signal() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const HOUR = 3_600_000;

describe('createLoop', () => {
  const loops: Loop[] = [];
  afterEach(async () => {
    await Promise.all(loops.splice(0).map((l) => l.stop()));
  });
  const track = (loop: Loop) => (loops.push(loop), loop);

  it('runs a pass at start, and another at once when woken, long before its poll', async () => {
    let passes = 0;
    const second = signal();
    const first = signal();
    const loop = track(
      createLoop({
        name: 'test',
        logger: recorder(),
        pollMs: HOUR,
        async step() {
          passes += 1;
          if (passes === 1) first.resolve();
          else second.resolve();
        },
      }),
    );
    loop.start();
    await first.promise;
    loop.wake();
    await second.promise;
    expect(passes).toBe(2);
  });

  it('goes again right after a pass during which it was woken', async () => {
    const passes: number[] = [];
    const done = signal();
    const loop: Loop = track(
      createLoop({
        name: 'test',
        logger: recorder(),
        pollMs: HOUR,
        async step() {
          passes.push(passes.length + 1);
          // A commit lands while the pass is still reading: its wake-up must not be lost.
          if (passes.length === 1) loop.wake();
          else done.resolve();
        },
      }),
    );
    loop.start();
    await done.promise;
    expect(passes).toEqual([1, 2]);
  });

  it('waits what the pass asks for, 0 meaning at once', async () => {
    let passes = 0;
    const done = signal();
    const loop = track(
      createLoop({
        name: 'test',
        logger: recorder(),
        pollMs: HOUR,
        async step() {
          passes += 1;
          if (passes === 3) done.resolve();
          return passes < 3 ? 0 : undefined;
        },
      }),
    );
    loop.start();
    await done.promise;
    expect(passes).toBe(3);
  });

  it('stops without waiting for its poll, after the pass in progress, and passes no more', async () => {
    let passes = 0;
    const inPass = signal();
    const release = signal();
    const loop = createLoop({
      name: 'test',
      logger: recorder(),
      pollMs: HOUR,
      async step() {
        passes += 1;
        inPass.resolve();
        await release.promise;
      },
    });
    loop.start();
    await inPass.promise;
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    expect(loop.stop()).toBe(loop.stop());
    await Promise.resolve();
    expect(stopped).toBe(false);
    release.resolve();
    await stopping;
    loop.wake();
    expect(passes).toBe(1);
  });

  it('logs a failing pass (the first with its error, then one line each) and retries with backoff', async () => {
    const log = recorder();
    let passes = 0;
    const recovered = signal();
    const loop = track(
      createLoop({
        name: 'claimer',
        logger: log,
        pollMs: HOUR,
        backoff: { baseMs: 2, maxMs: 4 },
        async step() {
          passes += 1;
          if (passes <= 3) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
          recovered.resolve();
        },
      }),
    );
    loop.start();
    await recovered.promise;
    expect(log.lines.map((l) => [l.level, l.message])).toEqual([
      ['error', 'claimer failed; retrying'],
      ['warn', 'claimer still failing; retrying'],
      ['warn', 'claimer still failing; retrying'],
    ]);
    expect(log.lines[0]!.details.err).toBeInstanceOf(Error);
    expect(log.lines[1]!.details).toMatchObject({ error: 'connect ECONNREFUSED', code: 'ECONNREFUSED', failures: 2 });
    expect(log.lines[1]!.details).not.toHaveProperty('err');
  });
});

describe('settleWithin', () => {
  it('returns once the promises settle, rejections included', async () => {
    await settleWithin([Promise.resolve(1), Promise.reject(new Error('x'))], HOUR);
  });

  it('returns after the time limit when a promise never settles', async () => {
    await settleWithin([new Promise(() => {})], 1);
  });
});

describe('createEvents', () => {
  it('calls listeners in order with typed arguments until they are removed', () => {
    const events = createEvents<{ 'run:event': [id: number, name: string]; 'queue:wake': [] }>(recorder());
    const seen: string[] = [];
    const off = events.on('run:event', (id, name) => seen.push(`a ${id} ${name}`));
    events.on('run:event', (id) => seen.push(`b ${id}`));
    events.emit('run:event', 1, 'x');
    off();
    events.emit('run:event', 2, 'y');
    events.emit('queue:wake');
    expect(seen).toEqual(['a 1 x', 'b 1', 'b 2']);
  });

  it('logs a throwing listener and still calls the others', () => {
    const log = recorder();
    const events = createEvents<{ 'queue:wake': [] }>(log);
    let called = 0;
    events.on('queue:wake', () => {
      throw new Error('broken listener');
    });
    events.on('queue:wake', () => void (called += 1));
    expect(() => events.emit('queue:wake')).not.toThrow();
    expect(called).toBe(1);
    expect(log.lines).toEqual([
      {
        level: 'error',
        details: { event: 'queue:wake', err: expect.objectContaining({ message: 'broken listener' }) },
        message: 'a listener of queue:wake failed',
      },
    ]);
  });
});

describe('errorMessage', () => {
  it('reads the message of an error, the inner errors of an empty AggregateError, or the value', () => {
    expect(errorMessage(new Error('boom'))).toBe('boom');
    expect(
      errorMessage(new AggregateError([new Error('connect ECONNREFUSED ::1:5432'), new Error('connect ECONNREFUSED 127.0.0.1:5432')])),
    ).toBe('connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432');
    expect(errorMessage(Object.assign(new Error(''), { code: 'ECONNRESET' }))).toBe('ECONNRESET');
    expect(errorMessage('plain text')).toBe('plain text');
  });
});
