import type { BackgroundLogger } from './logger.js';

/** Event names and the arguments their listeners get: `{ 'run:event': [event: RunEvent, run: Run] }`. */
export type EventMap = Record<string, readonly unknown[]>;

export interface Events<M extends EventMap> {
  /** Adds a listener; returns the function that removes it. */
  on<K extends keyof M & string>(name: K, listener: (...args: M[K]) => void): () => void;
  /**
   * Calls every listener of `name`, in the order they were added. A listener that throws is
   * logged and does not stop the others: the emitter (a committed transition, a finished job)
   * must never fail because of who is listening.
   */
  emit<K extends keyof M & string>(name: K, ...args: M[K]): void;
}

/** Typed local events (graphile-worker's `safeEmit`, with the listener's failure logged instead of lost). */
export function createEvents<M extends EventMap>(logger: BackgroundLogger): Events<M> {
  type Listener = (...args: readonly unknown[]) => void;
  const listeners = new Map<keyof M, Set<Listener>>();
  return {
    on(name, listener) {
      let set = listeners.get(name);
      if (!set) listeners.set(name, (set = new Set()));
      const entry = listener as unknown as Listener;
      set.add(entry);
      return () => void set.delete(entry);
    },
    emit(name, ...args) {
      const set = listeners.get(name);
      if (!set) return;
      for (const listener of [...set]) {
        try {
          listener(...args);
        } catch (err) {
          logger.error({ event: name, err }, `a listener of ${name} failed`);
        }
      }
    },
  };
}
