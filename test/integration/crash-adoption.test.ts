import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/index.js';
import { createRunEngine, type FullRunEngine } from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { freePort } from '../helpers/baton-bin.js';
import { spawnTs, type ChildHandle } from '../helpers/child.js';
import { createSandboxFixture, type SandboxFixture } from '../helpers/sandbox.js';
import { until } from '../helpers/until.js';

/**
 * `kill -9` of the server after the local runner started but before the run was marked running:
 * the run is re-claimed with a new callback token and adopts the runner that is still alive, whose
 * result (sent with the first token) must be accepted: the run ends `succeeded`, not `timed_out`.
 */
const CHILD = 'test/fixtures/serve-child.ts';
const RESULT = 'adopted and finished';

let root: string | undefined;
let fixture: SandboxFixture | undefined;
let store: Store | undefined;
const children: ChildHandle[] = [];

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
  await store?.close();
  store = undefined;
  fixture?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = undefined;
});

describe('a run whose server died while provisioning', () => {
  it('keeps its result: the re-claim adopts the live runner and accepts its callback', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-adoption-'));
    fixture = createSandboxFixture();
    const repo = createBareRepo(fixture.shared, 'app');
    // The agent waits for this file, so it reports only after the run was re-claimed.
    const gate = path.join(fixture.shared, 'gate');
    const result = JSON.stringify({ type: 'result', subtype: 'success', is_error: false, num_turns: 1, result: RESULT });
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      [
        'queue:',
        '  leaseSeconds: 1',
        '  pollSeconds: 0.1',
        '  backoffBaseSeconds: 0.1',
        'repositories:',
        `  acme/app: { path: ${JSON.stringify(repo)} }`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    const database = `sqlite:${path.join(root, 'baton.db')}`;
    const env = {
      PORT: String(port),
      HOST: '127.0.0.1',
      WORKSPACE_PROVIDER: 'local',
      DATABASE_URL: database,
      BATON_DATA_DIR: fixture.dataDir,
      BATON_CONFIG: path.join(root, 'baton.yaml'),
      SANDBOX: JSON.stringify(fixture.sandbox),
      AGENT_COMMAND: JSON.stringify(['/bin/sh', '-c', `while [ ! -e ${gate} ]; do sleep 0.05; done; echo '${result}'`]),
    };
    const first = spawnTs(CHILD, { ...env, HOLD_AFTER_CREATE: '1' });
    children.push(first);
    await first.waitFor((m) => m.ready === true);

    store = createStore({ url: database });
    const engine: FullRunEngine = createRunEngine({ store, queue: { ...DEFAULTS.queue, leaseMs: 1_000 } });
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 });
    const created = await first.waitFor((m) => m.created !== undefined, 60_000);
    const recordFile = path.join(fixture.dataDir, 'workspaces', String(created.created), 'runner.json');
    await until(() => (JSON.parse(fs.readFileSync(recordFile, 'utf8')) as { pid: number | null }).pid, 'the runner to be started');
    expect((await engine.get(run.id))?.status).toBe('provisioning');
    await first.kill('SIGKILL');

    const second = spawnTs(CHILD, env);
    children.push(second);
    // The dead server's lease runs out; the re-claim adopts the live workspace by its name.
    await until(async () => {
      const current = await engine.get(run.id);
      return current?.status === 'running' && current.attempts === 2;
    }, 'the run to be re-claimed and running again');
    fs.writeFileSync(gate, '');

    const finished = await until(async () => {
      const current = await engine.get(run.id);
      return current && current.status !== 'running' ? current : null;
    }, 'the run to end');
    expect(finished).toMatchObject({ status: 'succeeded', summary: RESULT });
    const transitions = (await engine.events(run.id)).filter((e) => e.type !== 'run:progress');
    expect(transitions.map((e) => e.type)).toEqual([
      'run:queued',
      'run:claimed',
      'run:requeued',
      'run:claimed',
      'run:started',
      'run:succeeded',
    ]);
    await until(() => !fs.existsSync(path.dirname(recordFile)), 'the workspace to be torn down');
  }, 120_000);
});
