import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkSection } from '../../src/config-schema/index.js';
import { localSection } from '../../src/workspaces/local/settings.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-local-settings-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const deps = (dataDir = path.join(dir, 'elsewhere')) => ({
  dataDir,
  database: { url: `sqlite:${path.join(dataDir, 'baton.db')}`, sqliteSynchronous: 'NORMAL' as const },
  configFile: undefined,
});
const check = (raw: unknown, dataDir?: string) => checkSection(localSection, 'local', raw, deps(dataDir) as never);

describe('local: settings', () => {
  it('defaults to the bubblewrap sandbox, runs as nobody when baton is root', () => {
    expect(check(undefined)).toMatchObject({
      value: { sandbox: 'bwrap', readOnlyPaths: [], rootUser: { uid: 65534, gid: 65534 } },
      problems: [],
    });
  });

  it('reads every setting', () => {
    const gitConfig = path.join(dir, 'gitconfig');
    const credentials = path.join(dir, '.credentials.json');
    fs.writeFileSync(gitConfig, '');
    fs.writeFileSync(credentials, '{}');
    expect(
      check({ sandbox: 'none', readOnlyPaths: [dir], gitConfig, claudeCredentials: credentials, rootUser: '1500:1501', runnerNice: 5 })
        .value,
    ).toEqual({
      sandbox: 'none',
      readOnlyPaths: [dir],
      gitConfig,
      claudeCredentials: credentials,
      rootUser: { uid: 1500, gid: 1501 },
      runnerNice: 5,
      runUids: { first: 200000, last: 265535 },
    });
  });

  it('names every bad key, and refuses paths inside what runs must never see', () => {
    const data = path.join(dir, 'data');
    fs.mkdirSync(data);
    expect(check({ sandbox: 'docker', readOnlyPaths: ['relative/path'], rootUser: '0:0', sandboxes: true }, data).problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('local.sandboxes'),
        'local.sandbox must be one of bwrap, none, got "docker"',
        'local.readOnlyPaths[0] must be an absolute path, got "relative/path"',
        'local.rootUser must be "uid:gid" of a user other than root, e.g. "65534:65534", got "0:0"',
      ]),
    );
    expect(check({ readOnlyPaths: [path.join(dir, 'missing'), data], gitConfig: dir }, data).problems).toEqual([
      `local.readOnlyPaths[0] ${path.join(dir, 'missing')} cannot be used (ENOENT)`,
      `local.readOnlyPaths[1] ${data} is inside ${data}, which runs must never see`,
      `local.gitConfig must be a file, got the directory ${dir}`,
    ]);
    expect(check('bwrap').problems).toEqual([expect.stringContaining('local must be a mapping')]);
  });
});
