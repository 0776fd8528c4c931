import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nestedSandboxSpawn, runAgent, type RunAgentOptions } from '../../src/agent/index.js';
import { startCallbackReceiver, type CallbackReceiver } from '../fakes/agent/callback-receiver.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';

/**
 * What each step of a run gets: the install and build commands run the repository's
 * code, so they get no token unless the stage grants it (`setupTokens`); the agent gets its forge
 * and Claude tokens but never the callback token; and in the nested sandbox neither can see the
 * runner that holds it (here the runner is this test process).
 */

const CALLBACK = 'callback-token-steps-0123456789';
const FORGE = 'forge-token-steps-0123456789';
const OAUTH = 'oauth-token-steps-0123456789';

/**
 * A step (`node report.cjs <name>`) that writes what it was given, and which processes it can
 * see, to $REPORT_DIR/<name>.json; as the agent it then ends like Claude Code.
 */
const REPORT_SCRIPT = `const fs = require('fs');
const name = process.argv[2];
fs.writeFileSync(process.env.REPORT_DIR + '/' + name + '.json', JSON.stringify({
  env: process.env,
  seesRunner: fs.existsSync('/proc/' + process.env.RUNNER_PID + '/environ'),
  pids: fs.readdirSync('/proc').filter((e) => /^[0-9]+$/.test(e)).length,
}));
if (name === 'agent') console.log(JSON.stringify({ type: 'result', subtype: 'success', is_error: false, num_turns: 1, result: 'reported' }));
`;

let root: string;
let reports: string;
let receiver: CallbackReceiver;

beforeEach(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-steps-'));
  reports = path.join(root, 'reports');
  fs.mkdirSync(reports);
  fs.writeFileSync(path.join(root, 'report.cjs'), REPORT_SCRIPT);
  receiver = await startCallbackReceiver({ token: CALLBACK, failFirst: 0 });
});

afterEach(async () => {
  await receiver.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function runStage(overrides: Partial<RunAgentOptions>) {
  const outcome = await runAgent({
    stage: 'develop',
    heavy: true,
    issueNumber: '1',
    cloneUrl: createBareRepo(root, `app-${Math.random().toString(36).slice(2, 8)}`),
    repoName: 'app',
    workdir: fs.mkdtempSync(path.join(root, 'ws-')),
    callbackUrl: receiver.callbackUrl,
    callbackToken: CALLBACK,
    forgeToken: FORGE,
    claudeOauthToken: OAUTH,
    // What a runner given its secrets in the environment (the old contract) would pass on.
    env: {
      PATH: process.env.PATH,
      HOME: root,
      REPORT_DIR: reports,
      RUNNER_PID: String(process.pid),
      CALLBACK_TOKEN: CALLBACK,
      GITEA_TOKEN: FORGE,
      CLAUDE_CODE_OAUTH_TOKEN: OAUTH,
      ANTHROPIC_API_KEY: 'sk-ant-api-key',
    },
    installCommand: `${process.execPath} ${path.join(root, 'report.cjs')} install`,
    buildCommand: `${process.execPath} ${path.join(root, 'report.cjs')} build`,
    agentCommand: [process.execPath, path.join(root, 'report.cjs'), 'agent'],
    logServer: false,
    ...overrides,
  });
  expect(outcome, outcome.summary).toMatchObject({ status: 'succeeded', callbackDelivered: true });
  const read = (name: string) =>
    JSON.parse(fs.readFileSync(path.join(reports, `${name}.json`), 'utf8')) as {
      env: Record<string, string>;
      seesRunner: boolean;
      pids: number;
    };
  return { install: read('install'), build: read('build'), agent: read('agent') };
}

/** The variables holding a secret. (git's credential header is only set for http(s) clone URLs, not these file ones.) */
const secretsOf = (env: Record<string, string>) =>
  Object.entries(env)
    .filter(([, value]) => [CALLBACK, FORGE, OAUTH, 'sk-ant-api-key'].some((secret) => value.includes(secret)))
    .map(([key]) => key)
    .sort();

describe('the steps of a run', () => {
  it('give the install and build commands no token by default, and the agent its own but never the callback token', async () => {
    const { install, build, agent } = await runStage({});
    expect(secretsOf(install.env)).toEqual([]);
    expect(secretsOf(build.env)).toEqual([]);
    expect(secretsOf(agent.env)).toEqual(['CLAUDE_CODE_OAUTH_TOKEN', 'GITEA_TOKEN']);
    expect(agent.env.GITEA_TOKEN).toBe(FORGE);
  });

  it('give the setup commands the tokens the stage grants, and only those', async () => {
    const forge = await runStage({ setupTokens: ['forge'] });
    expect(secretsOf(forge.install.env)).toEqual(['GITEA_TOKEN']);
    const both = await runStage({ setupTokens: ['forge', 'agent'] });
    expect(secretsOf(both.build.env)).toEqual(['CLAUDE_CODE_OAUTH_TOKEN', 'GITEA_TOKEN']);
  });

  it('in the nested sandbox, cannot see the runner that holds the callback token', async () => {
    const plain = await runStage({});
    // Without it they can (the runner is this process): the check below can fail.
    expect(plain.agent.seesRunner).toBe(true);
    const nested = await runStage({ spawn: nestedSandboxSpawn() });
    for (const step of [nested.install, nested.build, nested.agent]) {
      expect(step.seesRunner).toBe(false);
      // bwrap's init and the step itself (node, and sh for the setup commands).
      expect(step.pids).toBeLessThanOrEqual(3);
    }
  });
});
