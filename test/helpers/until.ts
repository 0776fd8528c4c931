/**
 * The one polling helper (docs/testing.md): polls `fn` until it returns something truthy and
 * returns that; fails naming `what` after `timeoutMs`. Generous defaults: tests run on a busy
 * 2-core machine, and this bounds waiting, it asserts no speed. Wait on an event the code emits
 * when there is one; never for a fixed time.
 */
export async function until<T>(fn: () => T | Promise<T>, what: string, timeoutMs = 60_000, intervalMs = 25): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
