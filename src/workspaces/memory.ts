import type { Workspace, WorkspaceProvider, WorkspaceSpec } from './types.js';

export interface MemoryProviderOptions {
  now?: () => number;
  /** Status transitions happen after this many ms (0 = on the next tick). @default 0 */
  transitionMs?: number;
}

export interface MemoryProvider extends WorkspaceProvider {
  /** Specs of every create call, in order (for tests). */
  readonly created: WorkspaceSpec[];
  /** Makes the next `count` create calls throw `error`. */
  failNextCreates(count: number, error?: Error): void;
}

/**
 * An in-process provider for tests and demos: workspaces are records that move through
 * pending → running, stopping → stopped, deleting → gone asynchronously, like a real backend.
 */
export function createMemoryProvider(options: MemoryProviderOptions = {}): MemoryProvider {
  const now = options.now ?? Date.now;
  const delay = options.transitionMs ?? 0;
  const workspaces = new Map<string, Workspace>();
  const timers = new Set<NodeJS.Timeout>();
  const created: WorkspaceSpec[] = [];
  let failures: { remaining: number; error: Error } = { remaining: 0, error: new Error('injected') };

  const later = (fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, delay);
    timers.add(timer);
  };
  const snapshot = (w: Workspace): Workspace => ({ ...w });

  return {
    name: 'memory',
    created,
    failNextCreates(count, error = new Error('injected create failure')) {
      failures = { remaining: count, error };
    },
    async create(spec) {
      if (failures.remaining > 0) {
        failures.remaining -= 1;
        throw failures.error;
      }
      created.push(spec);
      const existing = workspaces.get(spec.name);
      if (existing) return snapshot(existing);
      const workspace: Workspace = { id: `mem-${spec.name}`, name: spec.name, status: 'pending', createdAt: now() };
      workspaces.set(spec.name, workspace);
      later(() => {
        if (workspace.status === 'pending') workspace.status = 'running';
      });
      return snapshot(workspace);
    },
    async get(name) {
      const w = workspaces.get(name);
      return w ? snapshot(w) : null;
    },
    async list() {
      return [...workspaces.values()].map(snapshot);
    },
    async stop(name) {
      const w = workspaces.get(name);
      if (!w || w.status === 'stopped' || w.status === 'stopping' || w.status === 'deleting') return;
      w.status = 'stopping';
      later(() => {
        if (w.status === 'stopping') w.status = 'stopped';
      });
    },
    async delete(name) {
      const w = workspaces.get(name);
      if (!w || w.status === 'deleting') return;
      w.status = 'deleting';
      later(() => {
        if (workspaces.get(name) === w) workspaces.delete(name);
      });
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
