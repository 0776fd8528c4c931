import { sseMessages } from '../../src/cli/index.js';

export interface SseEvent {
  id: number;
  runId: number;
  type: string;
  toStatus: string | null;
  data: Record<string, unknown> | null;
  run: { id: number; status: string } | null;
}

/** A live SSE connection that records every message until closed. */
export interface SseConnection {
  events: SseEvent[];
  /** Resolves once `predicate` holds for the events received so far. */
  until(predicate: (events: SseEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
  /** Settles when the server ends the stream. */
  ended: Promise<void>;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseConnection> {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  if (response.status !== 200) throw new Error(`event stream answered ${response.status}: ${await response.text()}`);
  const events: SseEvent[] = [];
  const waiters = new Set<() => void>();
  const ended = (async () => {
    try {
      for await (const message of sseMessages(response.body!)) {
        events.push(JSON.parse(message.data) as SseEvent);
        for (const w of waiters) w();
      }
    } catch {
      // aborted or dropped by the server
    }
    for (const w of waiters) w();
  })();
  return {
    events,
    ended,
    close: () => controller.abort(),
    until(predicate, timeoutMs = 10_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (predicate(events)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting; got ${events.map((e) => `${e.id}:${e.type}`).join(', ')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}
