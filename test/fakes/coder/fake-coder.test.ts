import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeWithReference } from '../../helpers/reference.js';
import { until } from '../../helpers/until.js';
import { createFakeCoder, type FakeCoder } from './index.js';

let coder: FakeCoder;
beforeEach(async () => {
  coder = await createFakeCoder({ stepMs: 2 });
});
afterEach(async () => {
  await coder.close();
});

// JSON bodies are read at any depth in assertions; the shapes are what these tests check.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

async function call(method: string, p: string, body?: unknown, token: string | null = coder.token) {
  const res = await fetch(`${coder.url}/api/v2${p}`, {
    method,
    headers: { ...(token ? { 'Coder-Session-Token': token } : {}), ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

const create = (name: string, extra: Record<string, unknown> = {}) =>
  call('POST', '/users/me/workspaces', { name, template_id: coder.template.id, ...extra });

function waitStatus(id: string, status: string): Promise<Json> {
  return until(async () => {
    const ws = await call('GET', `/workspaces/${id}`);
    if (ws.status === 200 && ws.body.latest_build.status === status) return ws.body;
    if (ws.status === 410 && status === 'deleted') return ws.body;
    return null;
  }, `workspace ${id} to become ${status}`);
}

describe('fake Coder: auth', () => {
  it('answers 401 with a codersdk.Response for a missing or wrong token, and does nothing', async () => {
    for (const token of [null, 'wrong-token']) {
      const res = await call('POST', '/users/me/workspaces', { name: 'x', template_id: coder.template.id }, token);
      expect(res.status).toBe(401);
      expect(typeof res.body.message).toBe('string');
    }
    expect(coder.workspaces()).toHaveLength(0);
  });
});

describe('fake Coder: create', () => {
  it('answers 201 with a pending start build that then runs', async () => {
    const res = await create('acme-app-42', { ttl_ms: 3_600_000, rich_parameter_values: [{ name: 'task_type', value: 'develop' }] });
    expect(res.status).toBe(201);
    expect(res.body.latest_build).toMatchObject({ transition: 'start', status: 'pending', job: { status: 'pending' } });
    expect(res.body).toMatchObject({ name: 'acme-app-42', owner_name: 'baton', template_id: coder.template.id, ttl_ms: 3_600_000 });
    const seen = new Set<string>();
    for (let i = 0; i < 500 && !seen.has('running'); i++) {
      seen.add((await call('GET', `/workspaces/${res.body.id}`)).body.latest_build.status);
    }
    expect(seen.has('running')).toBe(true);
    expect(coder.workspace('acme-app-42')?.richParameters).toEqual({ task_type: 'develop' });
  });

  it('answers 409 with Coder’s exact body when the name is taken, even while deleting', async () => {
    const first = await create('acme-app-42');
    const again = await create('acme-app-42');
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      message: 'Workspace "acme-app-42" already exists.',
      validations: [{ field: 'name', detail: 'This value is already in use and should be unique.' }],
    });
    await waitStatus(first.body.id, 'running');
    coder.faults.holdBuilds(true);
    expect((await call('POST', `/workspaces/${first.body.id}/builds`, { transition: 'delete' })).status).toBe(201);
    expect((await create('acme-app-42')).status).toBe(409);
    coder.faults.holdBuilds(false);
    await waitStatus(first.body.id, 'deleted');
    expect((await create('acme-app-42')).status).toBe(201);
  });

  it.each([['Bad Name'], ['a'.repeat(33)], ['new'], ['trailing-']])('rejects the name %j with a 400 validation body', async (name) => {
    const res = await create(name);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      message: 'Validation failed.',
      validations: [{ field: 'name', detail: `Validation failed for tag "workspace_name" with value: "${name}"` }],
    });
  });

  it('requires exactly one of template_id and template_version_id', async () => {
    const both = await create('x', { template_version_id: coder.template.activeVersionId });
    expect(both.status).toBe(400);
    expect(both.body.validations.map((v: { field: string }) => v.field)).toEqual(['template_id', 'template_version_id']);
    const neither = await call('POST', '/users/me/workspaces', { name: 'x' });
    expect(neither.status).toBe(400);
    expect(neither.body.validations[0].detail).toContain('required_without');
    const byVersion = await call('POST', '/users/me/workspaces', { name: 'x', template_version_id: coder.template.activeVersionId });
    expect(byVersion.status).toBe(201);
  });

  it.each([[59_999], [30 * 24 * 3_600_000]])('rejects ttl_ms %d', async (ttl) => {
    const res = await create('x', { ttl_ms: ttl });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('Invalid Workspace Time to Shutdown.');
    expect(res.body.validations[0].field).toBe('ttl_ms');
  });

  it('rejects an unknown template', async () => {
    const res = await call('POST', '/users/me/workspaces', { name: 'x', template_id: '11111111-1111-1111-1111-111111111111' });
    expect(res.status).toBe(400);
    expect(res.body.validations).toEqual([{ field: 'template_id', detail: 'template not found' }]);
  });
});

describe('fake Coder: lookup and list', () => {
  it('looks names up exactly per owner and answers 404 otherwise', async () => {
    await create('acme-app-42');
    expect((await call('GET', '/users/me/workspace/acme-app-42')).status).toBe(200);
    expect((await call('GET', '/users/me/workspace/acme-app-4')).body).toEqual({
      message: 'Resource not found or you do not have access to this resource',
    });
    coder.seedWorkspace({ name: 'other-ws', owner: 'alice' });
    expect((await call('GET', '/users/me/workspace/other-ws')).status).toBe(404);
    expect((await call('GET', '/users/alice/workspace/other-ws')).status).toBe(200);
  });

  it('answers 410 for a deleted workspace by id, 404 by name, and omits it from lists', async () => {
    const ws = coder.seedWorkspace({ name: 'gone-soon' });
    await call('POST', `/workspaces/${ws.id}/builds`, { transition: 'delete' });
    await waitStatus(ws.id, 'deleted');
    const byId = await call('GET', `/workspaces/${ws.id}`);
    expect(byId.status).toBe(410);
    expect(byId.body.message).toBe(
      `Workspace "${ws.id}" was deleted, you can view this workspace by specifying '?deleted=true' and trying again.`,
    );
    expect((await call('GET', `/workspaces/${ws.id}?include_deleted=true`)).status).toBe(200);
    expect((await call('GET', '/users/me/workspace/gone-soon')).status).toBe(404);
    expect((await call('GET', '/workspaces?q=owner:me')).body.count).toBe(0);
  });

  it('filters name: as a case-insensitive substring, owner: by user, and paginates with the total count', async () => {
    for (const name of ['app-4', 'app-42', 'APP-420', 'other']) coder.seedWorkspace({ name });
    coder.seedWorkspace({ name: 'app-43', owner: 'alice' });
    const mine = await call('GET', '/workspaces?q=' + encodeURIComponent('owner:me name:app-4'));
    expect(mine.body.workspaces.map((w: { name: string }) => w.name).sort()).toEqual(['APP-420', 'app-4', 'app-42']);
    expect(mine.body.count).toBe(3);
    const everyone = await call('GET', '/workspaces?q=' + encodeURIComponent('name:"app-4"'));
    expect(everyone.body.count).toBe(4);
    const page1 = await call('GET', '/workspaces?q=owner:me&limit=2&offset=0');
    const page2 = await call('GET', '/workspaces?q=owner:me&limit=2&offset=2');
    const page3 = await call('GET', '/workspaces?q=owner:me&limit=2&offset=4');
    expect([page1.body.count, page2.body.count, page3.body.count]).toEqual([4, 4, 4]);
    expect(page1.body.workspaces).toHaveLength(2);
    expect(page3.body.workspaces).toHaveLength(0);
    const names = [...page1.body.workspaces, ...page2.body.workspaces].map((w: { name: string }) => w.name);
    expect(new Set(names).size).toBe(4);
  });

  it('matches owner: against usernames only, so owner:<user id> lists nothing', async () => {
    const alice = coder.addUser('alice');
    coder.seedWorkspace({ name: 'alices', owner: 'alice' });
    expect((await call('GET', '/workspaces?q=owner:alice')).body.count).toBe(1);
    expect((await call('GET', '/workspaces?q=owner:ALICE')).body.count).toBe(1);
    expect((await call('GET', `/workspaces?q=owner:${alice.id}`)).body).toEqual({ workspaces: [], count: 0 });
  });

  it('answers GET /users/{user} by id, username or me, and 400 for an unknown user', async () => {
    const alice = coder.addUser('alice');
    expect((await call('GET', `/users/${alice.id}`)).body).toMatchObject({ id: alice.id, username: 'alice', status: 'active' });
    expect((await call('GET', '/users/alice')).body.id).toBe(alice.id);
    expect((await call('GET', '/users/me')).body.username).toBe(coder.user.username);
    const unknown = await call('GET', '/users/0b1d3c5e-0000-4000-8000-000000000000');
    expect(unknown).toEqual({
      status: 400,
      body: {
        message: '"user" must be an existing uuid or username.',
        detail: 'queried user="0b1d3c5e-0000-4000-8000-000000000000"',
      },
    });
  });
});

describe('fake Coder: builds', () => {
  it('moves stop and delete builds through their statuses and refuses a second active build', async () => {
    const ws = coder.seedWorkspace({ name: 'w1' });
    coder.faults.holdBuilds(true);
    const stop = await call('POST', `/workspaces/${ws.id}/builds`, { transition: 'stop' });
    expect(stop.status).toBe(201);
    expect(stop.body).toMatchObject({ transition: 'stop', status: 'pending', workspace_id: ws.id, build_number: 2 });
    const second = await call('POST', `/workspaces/${ws.id}/builds`, { transition: 'delete' });
    expect(second).toEqual({ status: 409, body: { message: 'A workspace build is already active.' } });
    coder.faults.holdBuilds(false);
    await waitStatus(ws.id, 'stopped');
    expect((await call('POST', `/workspaces/${ws.id}/builds`, { transition: 'delete' })).status).toBe(201);
    await waitStatus(ws.id, 'deleted');
    expect((await call('POST', `/workspaces/${ws.id}/builds`, { transition: 'stop' })).status).toBe(410);
  });

  it('rejects orphan on a non-delete build and a bad transition', async () => {
    const ws = coder.seedWorkspace({ name: 'w1' });
    expect((await call('POST', `/workspaces/${ws.id}/builds`, { transition: 'stop', orphan: true })).body).toEqual({
      message: 'Orphan is only permitted when deleting a workspace.',
    });
    expect((await call('POST', `/workspaces/${ws.id}/builds`, { transition: 'explode' })).status).toBe(400);
  });

  it('keeps a stuck stop in stopping until it is cancelled', async () => {
    const ws = coder.seedWorkspace({ name: 'w1', status: 'stopping', stuck: true });
    // A stop that is not stuck finishing shows that builds advanced meanwhile.
    const witness = coder.seedWorkspace({ name: 'w2', status: 'stopping' });
    await waitStatus(witness.id, 'stopped');
    const current = await call('GET', `/workspaces/${ws.id}`);
    expect(current.body.latest_build).toMatchObject({ status: 'stopping', job: { status: 'running' } });
    const cancel = () => call('PATCH', `/workspacebuilds/${current.body.latest_build.id}/cancel`);
    coder.faults.holdBuilds(true);
    expect(await cancel()).toEqual({ status: 200, body: { message: 'Job has been marked as canceled...' } });
    expect((await call('GET', `/workspaces/${ws.id}`)).body.latest_build).toMatchObject({
      status: 'canceling',
      job: { status: 'canceling' },
    });
    expect(await cancel()).toEqual({ status: 400, body: { message: 'Job has already been marked as canceled!' } });
    coder.faults.holdBuilds(false);
    await waitStatus(ws.id, 'canceled');
    expect(await cancel()).toEqual({ status: 400, body: { message: 'Job has already completed!' } });
  });

  it('cancels a pending build at once and answers 400 for a build that already finished', async () => {
    coder.faults.holdBuilds(true);
    const pending = await create('w1');
    const cancel = (id: string) => call('PATCH', `/workspacebuilds/${id}/cancel`);
    expect((await cancel(pending.body.latest_build.id)).status).toBe(200);
    expect((await call('GET', `/workspaces/${pending.body.id}`)).body.latest_build).toMatchObject({
      status: 'canceled',
      job: { status: 'canceled' },
    });
    coder.faults.holdBuilds(false);
    const done = coder.seedWorkspace({ name: 'w2', status: 'running' });
    const current = await call('GET', `/workspaces/${done.id}`);
    expect(await cancel(current.body.latest_build.id)).toEqual({ status: 400, body: { message: 'Job has already completed!' } });
  });

  it('can fail the start build of a create', async () => {
    coder.faults.failNextBuilds(1, 'start');
    const res = await create('w1');
    const failed = await waitStatus(res.body.id, 'failed');
    expect(failed.latest_build.job).toMatchObject({ status: 'failed', error: 'terraform apply failed (injected)' });
  });
});

describe('fake Coder: build parameters', () => {
  it('keeps one value per parameter the template declares, drops the others, and carries them to later builds', async () => {
    const template = coder.addTemplate('older', [
      { name: 'task_type', required: true },
      { name: 'deploy_env', required: false },
    ]);
    const res = await call('POST', '/users/me/workspaces', {
      name: 'old-template',
      template_id: template.id,
      rich_parameter_values: [
        { name: 'task_type', value: 'develop' },
        { name: 'callback_token_hash', value: 'ab'.repeat(32) },
      ],
    });
    expect(res.status).toBe(201);
    // Undeclared: dropped without a word; declared and not sent: its default.
    const expected = [
      { name: 'task_type', value: 'develop' },
      { name: 'deploy_env', value: '' },
    ];
    expect((await call('GET', `/workspacebuilds/${res.body.latest_build.id}/parameters`)).body).toEqual(expected);
    await waitStatus(res.body.id, 'running');
    const stop = await call('POST', `/workspaces/${res.body.id}/builds`, { transition: 'stop' });
    expect((await call('GET', `/workspacebuilds/${stop.body.id}/parameters`)).body).toEqual(expected);
  });

  it('answers 404 for an unknown build and 400 for an id that is not a UUID', async () => {
    expect(await call('GET', '/workspacebuilds/11111111-1111-1111-1111-111111111111/parameters')).toMatchObject({ status: 404 });
    expect(await call('GET', '/workspacebuilds/latest/parameters')).toEqual({
      status: 400,
      body: { message: 'Invalid UUID "workspacebuild".', detail: 'invalid UUID length: 6' },
    });
  });
});

describe('fake Coder: faults', () => {
  it('answers injected 5xx, drops connections and delays', async () => {
    coder.faults.failNext(1, { status: 502 });
    expect((await call('GET', '/workspaces?q=owner:me')).status).toBe(502);
    coder.faults.dropNext(1);
    await expect(call('GET', '/workspaces?q=owner:me')).rejects.toThrow();
    coder.faults.dropNext(1, { afterHandling: true, match: (r) => r.method === 'POST' });
    await expect(create('w1')).rejects.toThrow();
    expect(coder.workspace('w1')).toBeDefined();
    expect(coder.requests.at(-1)?.status).toBe('dropped');
  });
});

describeWithReference('coder/workspace-example.json', 'fake Coder: shape of reference/coder/workspace-example.json', (exampleFile) => {
  it('renders every field of the documented Workspace, latest_build and job', async () => {
    const example = JSON.parse(readFileSync(exampleFile, 'utf8')) as Json;
    const res = await create('shape');
    const keys = (o: object) => Object.keys(o).sort();
    expect(keys(res.body)).toEqual(keys(example));
    expect(keys(res.body.latest_build)).toEqual(keys(example.latest_build));
    const jobKeys = keys(example.latest_build.job).filter((k) => !['error', 'worker_id'].includes(k));
    expect(keys(res.body.latest_build.job).filter((k) => !['error', 'worker_id'].includes(k))).toEqual(jobKeys);
  });
});
