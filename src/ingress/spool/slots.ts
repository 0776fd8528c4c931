import fs from 'node:fs';
import path from 'node:path';
import { readOwner, SpoolLockError, tryLock, type HeldLock, type SlotOwner } from './lock.js';

/** A process's part of the spool directory: `slot-<n>/`, owned by whoever holds its `lock`. */
export const SLOT = /^slot-(\d+)$/;

/**
 * This process's slot: the first one whose lock is free, else a new one. Also says which slots
 * live processes hold, for the log.
 */
export async function claimSlot(
  root: string,
): Promise<{ dir: string; lock: HeldLock; busy: Array<{ slot: string; owner: SlotOwner | null }> }> {
  const numbers = (await fs.promises.readdir(root))
    .map((n) => SLOT.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  const busy: Array<{ slot: string; owner: SlotOwner | null }> = [];
  for (const n of numbers) {
    const slot = path.join(root, `slot-${n}`);
    const held = tryLock(path.join(slot, 'lock'));
    if (held) return { dir: slot, lock: held, busy };
    busy.push({ slot, owner: readOwner(path.join(slot, 'lock')) });
  }
  // A new slot. Another process may make the same one at the same moment: whoever makes the
  // directory locks it, the other goes on to the next number.
  for (let n = (numbers.at(-1) ?? 0) + 1; n <= (numbers.at(-1) ?? 0) + 1_000; n++) {
    const slot = path.join(root, `slot-${n}`);
    try {
      await fs.promises.mkdir(slot, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    const held = tryLock(path.join(slot, 'lock'));
    if (!held) continue;
    await syncDirectory(root);
    return { dir: slot, lock: held, busy };
  }
  throw new SpoolLockError(`no free slot could be made in ${root}`);
}

export async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
