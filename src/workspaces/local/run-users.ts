import fs from 'node:fs';
import path from 'node:path';

export interface UidRange {
  first: number;
  last: number;
}

/** `first-last`, both above 0 and the range in order; null otherwise. */
export function parseUidRange(text: string): UidRange | null {
  const m = /^(\d{1,10})-(\d{1,10})$/.exec(text.trim());
  if (!m) return null;
  const first = Number(m[1]);
  const last = Number(m[2]);
  return first > 0 && last >= first && last < 2 ** 32 - 1 ? { first, last } : null;
}

/**
 * A uid of `range` that no workspace under `root` has (the owner of its `work/` directory) and
 * nothing else is being given (`reserved`), starting from the run's own place in the range, so a
 * run keeps its uid when it is adopted again. The gid is the uid: each run is a group of one.
 */
export function pickRunUser(root: string, range: UidRange, runId: number, reserved: ReadonlySet<number>): { uid: number; gid: number } {
  const used = new Set(reserved);
  let entries: string[] = [];
  try {
    entries = fs.readdirSync(root);
  } catch {
    // No workspaces yet.
  }
  for (const name of entries) {
    try {
      used.add(fs.statSync(path.join(root, name, 'work')).uid);
    } catch {
      // Being created or removed.
    }
  }
  const size = range.last - range.first + 1;
  for (let i = 0; i < size; i++) {
    const uid = range.first + ((runId + i) % size);
    if (!used.has(uid)) return { uid, gid: uid };
  }
  throw new Error(`local.runUids ${range.first}-${range.last} has no uid left: every one is a live workspace's`);
}
