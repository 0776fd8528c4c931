/**
 * deploy/systemd/baton.service, checked offline (no systemd here): its sections and the settings a
 * baton service needs, parsed as systemd reads a unit (key=value lines under [Section]).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/child.js';

function parseUnit(text: string): Map<string, Array<[string, string]>> {
  const sections = new Map<string, Array<[string, string]>>();
  let current: Array<[string, string]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) {
      current = [];
      sections.set(header[1]!, current);
      continue;
    }
    const eq = line.indexOf('=');
    if (!current || eq < 0) throw new Error(`not a unit line: ${line}`);
    current.push([line.slice(0, eq), line.slice(eq + 1)]);
  }
  return sections;
}

describe('the systemd unit', () => {
  const unit = parseUnit(fs.readFileSync(path.join(REPO_ROOT, 'deploy/systemd/baton.service'), 'utf8'));
  const value = (section: string, key: string) =>
    unit
      .get(section)
      ?.filter(([k]) => k === key)
      .map(([, v]) => v) ?? [];

  it('starts baton serve as its own unprivileged user, with its settings from files', () => {
    expect([...unit.keys()]).toEqual(['Unit', 'Service', 'Install']);
    expect(value('Service', 'ExecStart')).toEqual(['/usr/bin/node /opt/baton/bin/baton.js serve']);
    expect(value('Service', 'User')).toEqual(['baton']);
    expect(value('Service', 'EnvironmentFile')).toEqual(['/etc/baton/baton.env']);
    expect(value('Service', 'Environment')).toEqual(expect.arrayContaining(['BATON_DATA_DIR=/var/lib/baton/data']));
    expect(value('Install', 'WantedBy')).toEqual(['multi-user.target']);
  });

  it('stops it with SIGTERM and time to drain, restarts it on failure, and lets it write only its data', () => {
    expect(value('Service', 'KillSignal')).toEqual(['SIGTERM']);
    expect(Number(value('Service', 'TimeoutStopSec')[0])).toBeGreaterThanOrEqual(30);
    expect(value('Service', 'Restart')).toEqual(['on-failure']);
    expect(value('Service', 'ProtectSystem')).toEqual(['strict']);
    expect(value('Service', 'ReadWritePaths')).toEqual(['/var/lib/baton']);
  });
});
