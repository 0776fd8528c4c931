import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WorkspaceProvider, WorkspaceSpec } from '../../src/workspaces/index.js';
import { until } from '../helpers/until.js';

/**
 * Conformance suite for the `WorkspaceProvider` port. Every implementation (memory, local,
 * coder) and every fake must pass it.
 *
 * Usage, in a `*.test.ts` file:
 *
 *   describeWorkspaceProvider('local', async () => {
 *     const provider = createLocalProvider({ … });
 *     return { provider, cleanup: async () => { await provider.close?.(); rm(tempDir) } };
 *   }, { timeoutMs: 15_000 });
 *
 * - `makeProvider` runs before each test and must give a fresh provider; `cleanup` runs after it
 *   (stop servers, remove temp dirs). The suite deletes the workspaces it created before calling
 *   `cleanup`, so a backend that is shared between tests stays tidy.
 * - A created workspace must reach `running` on its own and stay there until stopped: for a
 *   provider that runs a command, make it a command that waits (e.g. a fake agent that hangs).
 * - `spec(name)` builds the spec of each workspace; the default points callbacks at an unused
 *   local URL. Pass your own when the backend validates parameters.
 * - "Eventually" means within `timeoutMs` (default 10 s), polled every `pollMs` (default 50 ms).
 */
export interface ProviderUnderTest {
  provider: WorkspaceProvider;
  cleanup: () => Promise<void>;
}

export interface ConformanceOptions {
  spec?: (name: string) => WorkspaceSpec;
  /** @default 10_000 */
  timeoutMs?: number;
  /** @default 50 */
  pollMs?: number;
  /** Prefix of generated workspace names. @default 'conf' */
  namePrefix?: string;
}

export function defaultSpec(name: string): WorkspaceSpec {
  return {
    name,
    runId: 1,
    stage: 'develop',
    owner: 'acme',
    repo: 'app',
    number: 7,
    cloneUrl: 'https://forge.invalid/acme/app.git',
    forgeUrl: 'https://forge.invalid',
    forgeToken: 'forge-token-for-conformance',
    callbackUrl: 'http://127.0.0.1:9/api/runs/1/complete',
    callbackToken: 'callback-token-for-conformance',
    maxDurationMs: 60_000,
  };
}

export function describeWorkspaceProvider(
  name: string,
  makeProvider: () => Promise<ProviderUnderTest>,
  options: ConformanceOptions = {},
): void {
  const timeout = options.timeoutMs ?? 10_000;
  const interval = options.pollMs ?? 50;
  const specFor = options.spec ?? defaultSpec;

  describe(`WorkspaceProvider conformance: ${name}`, () => {
    let subject: ProviderUnderTest;
    let created: string[];
    const fresh = () => {
      const workspace = `${options.namePrefix ?? 'conf'}-${randomUUID().slice(0, 8)}`;
      created.push(workspace);
      return workspace;
    };
    const statusOf = async (workspace: string) => (await subject.provider.get(workspace))?.status ?? null;
    /** Eventually: within `timeoutMs`, polled every `pollMs`. */
    const eventually = (check: () => Promise<boolean>, what: string) => until(check, what, timeout, interval);
    const becomes = (workspace: string, status: string) =>
      eventually(async () => (await statusOf(workspace)) === status, `${workspace} to be ${status}`);
    const gone = (workspace: string) => eventually(async () => (await subject.provider.get(workspace)) === null, `${workspace} to be gone`);

    beforeEach(async () => {
      created = [];
      subject = await makeProvider();
    });

    afterEach(async () => {
      try {
        for (const workspace of created) await subject.provider.delete(workspace).catch(() => undefined);
        for (const workspace of created) {
          await gone(workspace);
        }
      } finally {
        await subject.cleanup();
      }
    });

    it('create returns a workspace with the spec name', async () => {
      const workspace = fresh();
      const result = await subject.provider.create(specFor(workspace));
      expect(result.name).toBe(workspace);
      expect(result.id).toEqual(expect.any(String));
      expect(result.id).not.toBe('');
      expect(Number.isFinite(result.createdAt)).toBe(true);
    });

    it('create of an existing name adopts it: same id, one workspace', async () => {
      const workspace = fresh();
      const first = await subject.provider.create(specFor(workspace));
      const second = await subject.provider.create(specFor(workspace));
      expect(second.id).toBe(first.id);
      const listed = (await subject.provider.list()).filter((w) => w.name === workspace);
      expect(listed).toHaveLength(1);
      expect(listed[0]!.id).toBe(first.id);
    });

    it('get of an unknown name is null', async () => {
      expect(await subject.provider.get(`missing-${randomUUID().slice(0, 8)}`)).toBeNull();
    });

    it('a created workspace is eventually running, and listed', async () => {
      const workspace = fresh();
      await subject.provider.create(specFor(workspace));
      await becomes(workspace, 'running');
      expect((await subject.provider.list()).map((w) => w.name)).toContain(workspace);
    });

    it('stop makes it eventually stopped, still present', async () => {
      const workspace = fresh();
      await subject.provider.create(specFor(workspace));
      await becomes(workspace, 'running');
      await subject.provider.stop(workspace);
      await becomes(workspace, 'stopped');
      // A second stop of a stopped workspace is a no-op.
      await subject.provider.stop(workspace);
      expect(await statusOf(workspace)).toBe('stopped');
    });

    it('delete makes it eventually gone from get and list', async () => {
      const workspace = fresh();
      await subject.provider.create(specFor(workspace));
      await becomes(workspace, 'running');
      await subject.provider.delete(workspace);
      await gone(workspace);
      expect((await subject.provider.list()).map((w) => w.name)).not.toContain(workspace);
    });

    it('delete after stop also removes it', async () => {
      const workspace = fresh();
      await subject.provider.create(specFor(workspace));
      await becomes(workspace, 'running');
      await subject.provider.stop(workspace);
      await becomes(workspace, 'stopped');
      await subject.provider.delete(workspace);
      await gone(workspace);
    });

    it('stop and delete of unknown names are no-ops', async () => {
      const workspace = `missing-${randomUUID().slice(0, 8)}`;
      await expect(subject.provider.stop(workspace)).resolves.toBeUndefined();
      await expect(subject.provider.delete(workspace)).resolves.toBeUndefined();
      expect(await subject.provider.get(workspace)).toBeNull();
      expect((await subject.provider.list()).map((w) => w.name)).not.toContain(workspace);
    });
  });
}
