import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSpool as create, type NewDelivery, type Spool } from '../../src/ingress/index.js';
import { spawnTs, type ChildHandle } from '../helpers/child.js';

/**
 * Several processes on one spool directory (two `baton serve` on one data directory, pods on one
 * shared volume): each owns a slot, nobody else appends to it or drains it, and the slot of a
 * process that ended is taken over, once, by whichever process locks it first.
 */

const dirs: string[] = [];
const spools: Spool[] = [];
const children: ChildHandle[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) await child.kill('SIGKILL');
  for (const spool of spools.splice(0)) await spool.close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function createSpool(dir: string): Spool {
  const spool = create({ dir });
  spools.push(spool);
  return spool;
}

function spoolRoot(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-spool-owners-'));
  dirs.push(dir);
  return path.join(dir, 'spool');
}

function delivery(id: string): NewDelivery {
  return {
    source: 'webhook',
    endpoint: '/webhook/gitea',
    deliveryId: id,
    event: 'issues',
    eventType: 'issues',
    headers: {},
    body: JSON.stringify({ id }),
    repository: 'acme/app',
    number: 1,
    receivedAt: Date.now(),
  };
}

/** A child process that spools `count` deliveries `<prefix>-n` and stays alive holding its slot. */
async function spoolingProcess(root: string, count: number, prefix: string): Promise<{ child: ChildHandle; dir: string }> {
  const child = spawnTs('test/fixtures/spool-child.ts', { SPOOL_DIR: root, COUNT: String(count), PREFIX: prefix });
  children.push(child);
  const ready = await child.waitFor((m) => m.spooled === count);
  return { child, dir: ready.dir as string };
}

async function drainIds(spool: Spool): Promise<string[]> {
  const ids: string[] = [];
  await spool.drain(async (d) => ids.push(d.deliveryId!));
  return ids;
}

describe('processes sharing a spool directory', () => {
  it('each own a slot: a live process’s deliveries are neither appended to nor drained by another', async () => {
    const root = spoolRoot();
    const other = await spoolingProcess(root, 3, 'other');
    const spool = createSpool(root);
    await spool.append(delivery('mine-1'));
    expect(other.dir).toBe(path.join(root, 'slot-1'));
    expect(spool.dir).toBe(path.join(root, 'slot-2'));
    // However often it looks, the other process is alive: its slot stays its own.
    expect(await spool.adopt()).toBe(0);
    expect(await drainIds(spool)).toEqual(['mine-1']);
    expect(fs.readdirSync(other.dir).filter((n) => n.endsWith('.log'))).toHaveLength(1);
    expect(spool.health()).toMatchObject({ pending: 0, adopted: 0 });
  });

  it('takes over what a process killed with kill -9 left in its slot, and drains it once', async () => {
    const root = spoolRoot();
    const killed = await spoolingProcess(root, 4, 'killed');
    const survivor = createSpool(root);
    await survivor.append(delivery('survivor-1'));
    expect(await survivor.adopt()).toBe(0);
    await killed.child.kill('SIGKILL');
    // The kernel let go of the dead process's lock: the next pass takes its deliveries, behind
    // what this process held.
    expect(await survivor.adopt()).toBe(4);
    expect(survivor.health()).toMatchObject({ pending: 5, adopted: 4 });
    await survivor.append(delivery('survivor-2'));
    expect(await drainIds(survivor)).toEqual(['survivor-1', 'killed-1', 'killed-2', 'killed-3', 'killed-4', 'survivor-2']);
    expect(fs.readdirSync(killed.dir).filter((n) => n.startsWith('spool-'))).toEqual([]);
    // Nothing left for anyone, now or after a restart.
    expect(await survivor.adopt()).toBe(0);
    const later = createSpool(root);
    await later.open();
    expect(later.pending).toBe(0);
    expect(later.dir).toBe(killed.dir);
  });

  it('gives a dead process’s slot to one taker when several look at once', async () => {
    const root = spoolRoot();
    const killed = await spoolingProcess(root, 6, 'killed');
    await killed.child.kill('SIGKILL');
    // A restarted process (it takes the free slot as its own) and two live ones passing.
    const takers = [createSpool(root), createSpool(root), createSpool(root)];
    await Promise.all(takers.map((s) => s.open().then(() => s.adopt())));
    expect(new Set(takers.map((s) => s.dir)).size).toBe(3);
    // One of them holds all six (as its own slot, or taken over), the others none.
    expect(takers.map((s) => s.pending).sort()).toEqual([0, 0, 6]);
    const drained = (await Promise.all(takers.map(drainIds))).flat().sort();
    expect(drained).toEqual(['killed-1', 'killed-2', 'killed-3', 'killed-4', 'killed-5', 'killed-6']);
  });

  it('takes back its own slot after a restart, with what it left there first', async () => {
    const root = spoolRoot();
    const first = await spoolingProcess(root, 2, 'before');
    await first.child.kill('SIGKILL');
    const restarted = createSpool(root);
    await restarted.open();
    expect(restarted.dir).toBe(first.dir);
    expect(restarted.health()).toMatchObject({ pending: 2, adopted: 0 });
    await restarted.append(delivery('after-1'));
    expect(await drainIds(restarted)).toEqual(['before-1', 'before-2', 'after-1']);
  });

  it('never gives out a segment number whose progress file a crash left behind', async () => {
    const root = spoolRoot();
    const slot = path.join(root, 'slot-1');
    fs.mkdirSync(slot, { recursive: true });
    // The progress of segment 7, whose segment was deleted just before a crash.
    fs.writeFileSync(path.join(slot, 'spool-000000000007.log.done'), '999');
    const spool = createSpool(root);
    await spool.append(delivery('one'));
    expect(fs.readdirSync(slot).sort()).toEqual(['lock', 'spool-000000000008.log']);
    expect(await drainIds(spool)).toEqual(['one']);
  });

  it('takes over segments written directly in the spool directory, from before there were slots', async () => {
    const root = spoolRoot();
    const old = createSpool(root);
    for (const id of ['old-1', 'old-2']) await old.append(delivery(id));
    await old.close();
    // Laid out as the first builds of the spool left it: segments in the directory itself.
    for (const name of fs.readdirSync(old.dir).filter((n) => n.startsWith('spool-'))) {
      fs.renameSync(path.join(old.dir, name), path.join(root, name));
    }
    fs.rmSync(old.dir, { recursive: true });
    const takers = [createSpool(root), createSpool(root)];
    await Promise.all(takers.map((s) => s.open()));
    expect(takers.map((s) => s.pending).sort()).toEqual([0, 2]);
    expect((await Promise.all(takers.map(drainIds))).flat()).toEqual(['old-1', 'old-2']);
    expect(fs.readdirSync(root).filter((n) => n.startsWith('spool-'))).toEqual([]);
  });
});
