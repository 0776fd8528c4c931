import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/child.js';
import { postgresAvailable } from '../helpers/stores.js';

/**
 * The rules every suite lives by (docs/testing.md), checked on deliberately bad suites in
 * test/fixtures/hygiene, run by a vitest of their own with the project's test setup.
 */

interface Report {
  testResults: Array<{
    name: string;
    status: string;
    message: string;
    assertionResults: Array<{ title: string; status: string; failureMessages: string[] }>;
  }>;
}

const VITEST = path.join(REPO_ROOT, 'node_modules/vitest/vitest.mjs');
const CONFIG = path.join(REPO_ROOT, 'test/fixtures/hygiene/vitest.config.ts');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-hygiene-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs the fixture files matching `filter` and returns vitest's JSON report. */
async function runFixtures(filter: string, env: Record<string, string>): Promise<Report> {
  const outputFile = path.join(dir, `report-${filter}-${Object.keys(env).join('-')}.json`);
  const child = spawn(process.execPath, [VITEST, 'run', '--config', CONFIG, '--reporter=json', `--outputFile=${outputFile}`, filter], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  if (!fs.existsSync(outputFile)) throw new Error(`the fixture run wrote no report:\n${output}`);
  return JSON.parse(fs.readFileSync(outputFile, 'utf8')) as Report;
}

const byTitle = (report: Report) => new Map(report.testResults.flatMap((file) => file.assertionResults.map((a) => [a.title, a])));

describe('the leak check', () => {
  let report: Report;
  beforeAll(async () => {
    report = await runFixtures('leaks.fixture', {});
  }, 60_000);

  it.each([
    ['leaks an interval', /a setInterval every 60000 ms \(unref\), created at .*leaks\.fixture\.ts:\d+/],
    ['leaks a pending timeout', /a pending setTimeout of 60000 ms, created at .*leaks\.fixture\.ts:\d+/],
    ['leaks a listening server', /a server listening on 127\.0\.0\.1:\d+/],
    ['leaks a child process', /child process \d+ still running: sleep 60/],
    ['leaks an SQLite store', /open file .*baton-sqlite-\w+\/baton\.db/],
  ])('fails "%s", naming what was left', (title, leak) => {
    const result = byTitle(report).get(title);
    expect(result?.status).toBe('failed');
    expect(result?.failureMessages.join('\n')).toMatch(new RegExp(`"${title}" left behind:`));
    expect(result?.failureMessages.join('\n')).toMatch(leak);
  });

  it('fails a test that leaves a PostgreSQL pool open, naming its connection', async (ctx) => {
    if (!(await postgresAvailable())) ctx.skip();
    const result = byTitle(report).get('leaks a PostgreSQL pool');
    expect(result?.status).toBe('failed');
    expect(result?.failureMessages.join('\n')).toMatch(/a connection from 127\.0\.0\.1:\d+ to 127\.0\.0\.1:5432/);
  });

  it('passes a test that closes what it opened, and a file whose afterAll cleans up', () => {
    expect(byTitle(report).get('leaves nothing behind')?.status).toBe('passed');
    expect(report.testResults[0]?.message).toBe('');
  });
});

describe('reference suites', () => {
  let reference: string;
  beforeAll(() => {
    reference = path.join(dir, 'reference');
    fs.mkdirSync(reference);
    fs.writeFileSync(path.join(reference, 'present.json'), '{}');
  });

  it.each([
    ['under CI=true', { CI: 'true' }],
    ['outside CI', {}],
  ])(
    'fail %s when their reference is missing, naming the path and BATON_REFERENCE_DIR',
    async (_, env) => {
      const report = await runFixtures('reference.fixture', { ...env, BATON_REFERENCE_DIR: reference });
      const results = report.testResults[0]!.assertionResults;
      expect(results.find((r) => r.title === 'reads it')?.status).toBe('passed');
      const missing = results.find((r) => r.title === 'finds its reference');
      expect(missing?.status).toBe('failed');
      expect(missing?.failureMessages.join('\n')).toContain(`${path.join(reference, 'missing/sample.json')} is missing`);
      expect(missing?.failureMessages.join('\n')).toContain('BATON_REFERENCE_DIR');
      expect(results.some((r) => r.title === 'would read it')).toBe(false);
    },
    60_000,
  );
});
