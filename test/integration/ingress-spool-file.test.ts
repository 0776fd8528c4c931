import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSpool as create, type NewDelivery, type Spool } from '../../src/ingress/index.js';

const dirs: string[] = [];
const spools: Spool[] = [];
afterEach(async () => {
  for (const spool of spools.splice(0)) await spool.close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * Closed after each test. A spool closed by a test stands for a process that ended: its files
 * stay as they are and its slot's lock is free (a real kill -9 is in ingress-spool-owners.test.ts).
 */
function createSpool(options: Parameters<typeof create>[0]): Spool {
  const spool = create(options);
  spools.push(spool);
  return spool;
}

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-spool-'));
  dirs.push(dir);
  return path.join(dir, 'spool');
}

function delivery(n: number): NewDelivery {
  return {
    source: 'webhook',
    endpoint: '/webhook/gitea',
    deliveryId: `d-${n}`,
    event: 'issues',
    eventType: 'issues',
    headers: { 'x-gitea-delivery': `d-${n}` },
    body: JSON.stringify({ n, text: 'ünïcode ✓' }),
    repository: 'acme/app',
    number: 7,
    receivedAt: 1_000 + n,
  };
}

describe('the delivery spool', () => {
  it('gives back what it was given, in order, once, after a restart in between', async () => {
    const dir = tempDir();
    const first = createSpool({ dir });
    await Promise.all([1, 2, 3].map((n) => first.append(delivery(n))));
    await first.append(delivery(4));
    expect(first.pending).toBe(4);
    await first.close();
    const second = createSpool({ dir });
    await second.open();
    expect(second.pending).toBe(4);
    expect(second.health()).toMatchObject({ pending: 4, oldestReceivedAt: 1_001 });
    const inserted: NewDelivery[] = [];
    expect(await second.drain(async (d) => inserted.push(d))).toBe(4);
    expect(inserted).toEqual([1, 2, 3, 4].map(delivery));
    expect(second.pending).toBe(0);
    // The restarted process took its slot back.
    expect(second.dir).toBe(path.join(dir, 'slot-1'));
    expect(fs.readdirSync(second.dir)).toEqual(['lock']);
    expect(await createSpool({ dir }).drain(async () => expect.fail('nothing left'))).toBe(0);
  });

  it('keeps what it could not move when the database fails mid-drain, and resumes after the last commit', async () => {
    const dir = tempDir();
    const spool = createSpool({ dir });
    for (let n = 1; n <= 5; n++) await spool.append(delivery(n));
    const inserted: number[] = [];
    const failAt3 = async (d: NewDelivery) => {
      const n = (JSON.parse(d.body) as { n: number }).n;
      if (n >= 3) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      inserted.push(n);
    };
    await expect(spool.drain(failAt3)).rejects.toThrow('ECONNREFUSED');
    expect(spool.pending).toBe(3);
    expect(spool.health().lastDrainError).toMatch(/ECONNREFUSED/);
    // Appends meanwhile go behind what waits.
    await spool.append(delivery(6));
    // A restart now: the progress file says where the inbox's commits ended.
    await spool.close();
    const restarted = createSpool({ dir });
    await restarted.open();
    expect(restarted.pending).toBe(4);
    await restarted.drain(async (d) => inserted.push((JSON.parse(d.body) as { n: number }).n));
    expect(inserted).toEqual([1, 2, 3, 4, 5, 6]);
    expect(restarted.health().lastDrainError).toBeNull();
  });

  it('drops the torn tail a crash leaves in mid-append, keeping it aside, and nothing before it', async () => {
    const dir = tempDir();
    const spool = createSpool({ dir });
    await spool.append(delivery(1));
    await spool.append(delivery(2));
    await spool.close();
    const [segment] = fs.readdirSync(spool.dir).filter((n) => n.endsWith('.log'));
    // Half of a third record, as a power cut during its write would leave (it was never answered).
    const whole = fs.readFileSync(path.join(spool.dir, segment!));
    fs.appendFileSync(path.join(spool.dir, segment!), whole.subarray(0, Math.floor(whole.length / 3)));
    const restarted = createSpool({ dir });
    await restarted.open();
    expect(restarted.pending).toBe(2);
    const inserted: NewDelivery[] = [];
    await restarted.drain(async (d) => inserted.push(d));
    expect(inserted).toEqual([delivery(1), delivery(2)]);
    expect(fs.readdirSync(restarted.dir).filter((n) => n.endsWith('.torn'))).toHaveLength(1);
  });

  it('sets aside a delivery the database refuses for good instead of blocking the rest behind it', async () => {
    const dir = tempDir();
    const spool = createSpool({ dir });
    for (let n = 1; n <= 3; n++) await spool.append(delivery(n));
    const inserted: number[] = [];
    await spool.drain(async (d) => {
      const n = (JSON.parse(d.body) as { n: number }).n;
      // SQLSTATE 22021: a byte sequence PostgreSQL cannot store in text.
      if (n === 2) throw Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' });
      inserted.push(n);
    });
    expect(inserted).toEqual([1, 3]);
    expect(spool.health().setAside).toBe(1);
    expect(fs.existsSync(path.join(spool.dir, 'rejected.log'))).toBe(true);
  });

  it('rejects an append it cannot write, and counts refusals for health', async () => {
    const dir = tempDir();
    const spool = createSpool({ dir });
    await spool.open();
    // The segment it is about to open is /dev/full: ENOSPC, as on a full disk.
    fs.symlinkSync('/dev/full', path.join(spool.dir, 'spool-000000000001.log'));
    await expect(spool.append(delivery(1))).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(spool.pending).toBe(0);
    spool.refused('spool: ENOSPC');
    expect(spool.health()).toMatchObject({ refused: 1, lastRefusal: { reason: 'spool: ENOSPC' } });
  });

  it('opens again at the next append after an open that failed', async () => {
    const dir = tempDir();
    // Something in the way of the spool directory, then taken away by an operator.
    fs.writeFileSync(dir, 'not a directory');
    const spool = createSpool({ dir });
    await expect(spool.append(delivery(1))).rejects.toThrow();
    expect(spool.pending).toBe(0);
    fs.rmSync(dir);
    await spool.append(delivery(2));
    expect(spool.dir).toBe(path.join(dir, 'slot-1'));
    const inserted: NewDelivery[] = [];
    await spool.drain(async (d) => inserted.push(d));
    expect(inserted).toEqual([delivery(2)]);
  });
});
