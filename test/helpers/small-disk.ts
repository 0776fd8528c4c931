import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A real small filesystem (a tmpfs) a test fills and frees, to meet ENOSPC where it happens. */
export interface SmallDisk {
  dir: string;
  /** Writes a filler file until the filesystem refuses the smallest write. */
  fill(): void;
  /** Removes the filler: the space is back. */
  free(): void;
  readonly full: boolean;
  unmount(): void;
}

/**
 * Mounts a tmpfs of `sizeMb` MiB. Mounting needs root (CI runs as root): elsewhere it returns null
 * and warns, and under CI it throws, so a suite that needs it is never skipped there unnoticed.
 */
export function mountSmallDisk(sizeMb: number, what: string): SmallDisk | null {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0711`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    if (process.env.CI === 'true') throw new Error(`${what} must run under CI, but mounting a tmpfs failed: ${String(err)}`);
    console.warn(`cannot mount a tmpfs (${String(err).split('\n')[0]}): ${what} is skipped`);
    return null;
  }
  const filler = path.join(dir, 'filler');
  let full = false;
  return {
    dir,
    get full() {
      return full;
    },
    fill() {
      const fd = fs.openSync(filler, 'a');
      try {
        for (const size of [1024 * 1024, 64 * 1024, 4096, 512, 1]) {
          const chunk = Buffer.alloc(size, 1);
          try {
            for (;;) fs.writeSync(fd, chunk);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          }
        }
      } finally {
        fs.closeSync(fd);
      }
      full = true;
    },
    free() {
      fs.rmSync(filler, { force: true });
      full = false;
    },
    unmount() {
      execFileSync('umount', ['-l', dir]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
