import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sandboxArguments } from '../../src/workspaces/local/sandbox.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-sandbox-args-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const layout = { workDir: '/data/ws/work', homeDir: '/data/ws/home' };

describe('sandbox arguments', () => {
  it('covers hidden paths that lie inside a read-only path, after binding it', () => {
    fs.mkdirSync(path.join(dir, 'data'));
    fs.writeFileSync(path.join(dir, 'baton.yaml'), 'secret: x\n');
    const args = sandboxArguments({
      ...layout,
      readOnly: [dir],
      hidden: [path.join(dir, 'data'), path.join(dir, 'baton.yaml'), '/elsewhere'],
    }).join(' ');
    expect(args).toContain(`--ro-bind ${dir} ${dir} --tmpfs ${path.join(dir, 'data')} --ro-bind /dev/null ${path.join(dir, 'baton.yaml')}`);
    expect(args).not.toContain('/elsewhere');
    // Namespaces of its own, the network shared, and the private /tmp before anything under it.
    expect(args).toMatch(/^--unshare-all --share-net --tmpfs \/tmp /);
    expect(args.indexOf('--tmpfs /tmp')).toBeLessThan(args.indexOf(`--ro-bind ${dir}`));
  });

  it('refuses to bind a path inside one that must stay hidden', () => {
    expect(() => sandboxArguments({ ...layout, readOnly: [path.join(dir, 'data', 'tools')], hidden: [path.join(dir, 'data')] })).toThrow(
      `${path.join(dir, 'data', 'tools')} cannot be visible to runs: it is inside ${path.join(dir, 'data')}, which runs must not see`,
    );
  });

  it('binds the writable workspace and home, and /etc entries one by one, never /etc or / as a whole', () => {
    const args = sandboxArguments({ ...layout, readOnly: [], hidden: [] });
    expect(args.join(' ')).toContain('--bind /data/ws/work /workspace --bind /data/ws/home /home/baton');
    const sources = args.flatMap((arg, i) => (arg === '--ro-bind' || arg === '--ro-bind-try' || arg === '--bind' ? [args[i + 1]] : []));
    expect(sources).not.toContain('/');
    expect(sources).not.toContain('/etc');
    expect(sources).not.toContain('/etc/ssl');
    expect(sources).toContain('/etc/resolv.conf');
  });
});
