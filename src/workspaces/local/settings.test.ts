import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseLocalSettings } from './settings.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-local-settings-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('local: settings', () => {
  it('defaults to the bubblewrap sandbox, runs as nobody when baton is root', () => {
    expect(parseLocalSettings(undefined)).toEqual({
      settings: { sandbox: 'bwrap', readOnlyPaths: [], rootUser: { uid: 65534, gid: 65534 } },
      problems: [],
    });
  });

  it('reads every setting', () => {
    const gitConfig = path.join(dir, 'gitconfig');
    const credentials = path.join(dir, '.credentials.json');
    fs.writeFileSync(gitConfig, '');
    fs.writeFileSync(credentials, '{}');
    expect(
      parseLocalSettings({ sandbox: 'none', readOnlyPaths: [dir], gitConfig, claudeCredentials: credentials, rootUser: '1500:1501' })
        .settings,
    ).toEqual({ sandbox: 'none', readOnlyPaths: [dir], gitConfig, claudeCredentials: credentials, rootUser: { uid: 1500, gid: 1501 } });
  });

  it('names every bad key, and refuses paths inside what runs must never see', () => {
    const data = path.join(dir, 'data');
    fs.mkdirSync(data);
    const { problems } = parseLocalSettings(
      {
        sandbox: 'docker',
        readOnlyPaths: ['relative/path', path.join(dir, 'missing'), path.join(data)],
        gitConfig: dir,
        rootUser: '0:0',
        sandboxes: true,
      },
      [data],
    );
    expect(problems).toEqual([
      'local.sandboxes is not a known key (known: sandbox, readOnlyPaths, gitConfig, claudeCredentials, rootUser)',
      'local.sandbox must be one of bwrap, none, got "docker"',
      'local.readOnlyPaths[0] must be an absolute path, got "relative/path"',
      `local.readOnlyPaths[1] ${path.join(dir, 'missing')} cannot be used (ENOENT)`,
      `local.readOnlyPaths[2] ${data} is inside ${data}, which runs must never see`,
      `local.gitConfig must be a file, got the directory ${dir}`,
      'local.rootUser must be "uid:gid" of a user other than root, e.g. "65534:65534", got "0:0"',
    ]);
    expect(parseLocalSettings('bwrap').problems).toEqual(['local must be a mapping, got "bwrap"']);
  });
});
