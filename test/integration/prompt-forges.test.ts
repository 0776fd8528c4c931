import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandFileError, forgeStepNames, PROMPT_FORGES, resolvePrompt, STAGES, type PromptForge } from '../../src/agent/index.js';
import { forgeEnv } from '../../src/agent/forge-env.js';
import { capabilityFor, forgeGatewayRoutes, giteaDialect, githubDialect, gitlabDialect } from '../../src/forge-gateway/index.js';
import { defaultStages, mayMergeOf, pushRulesOf } from '../../src/pipeline/index.js';
import type { ProgressAppended, Run } from '../../src/runs/index.js';

/**
 * Every built-in stage prompt, rendered for each forge, asks the forge only for what baton's
 * forge gateway lets that stage's run do there: each `curl` of the rendered prompt is sent, with
 * the variables the agent gets (forge-env.ts), through the gateway's own routes, and must come out
 * on the forge's side instead of being refused. On GitHub and GitLab no Gitea path is left.
 */

const BASE = 'http://baton.internal/gateway';
const CALLBACK_HASH = 'callback-token-hash';
const RUN_ID = 7;

/** `curl` commands of a rendered prompt: method, URL (variables expanded), -d body. */
interface Call {
  command: string;
  method: string;
  url: string;
  body: string;
}

/** The agent's environment for a run on `forge` (the variables the shell expands in the prompt's commands). */
function agentEnv(forge: PromptForge, capability: string): Record<string, string> {
  const runner = { GITEA_URL: BASE, BATON_FORGE: forge, GITEA_ORG: 'acme', GITEA_REPO: 'app' };
  return { ...runner, ...(forgeEnv(runner, capability) as Record<string, string>), ISSUE_NUMBER: '12', BRANCH: 'feature/issue-12-x' };
}

/** What bash would make of a double-quoted word: `$VAR`, `${VAR}`, `${VAR//\//%2F}`; `<placeholders>` become a number. */
function expand(word: string, env: Record<string, string>): string {
  const value = (name: string) => {
    const v = env[name];
    if (v === undefined) throw new Error(`the prompt's command uses $${name}, which the agent does not have: ${word}`);
    return v;
  };
  return word
    .replace(/\$\{(\w+)\/\/\\\/\/%2F\}/g, (_m, name: string) => value(name).replaceAll('/', '%2F'))
    .replace(/\$\{(\w+)\}|\$(\w+)/g, (_m, a: string | undefined, b: string | undefined) => value((a ?? b)!))
    .replace(/<[^<>]+>/g, '3');
}

/**
 * The body a `node -e '…' <args> | curl … --data-binary @-` sends: the prompt's own script, run
 * on stand-in files (a review's line comments as the prompt describes them).
 */
function pipedBody(before: string, env: Record<string, string>): string {
  const node = /node -e '([^']*)'((?:\s+(?:"[^"]*"|[^\s|"]+))*)\s*\|\s*$/.exec(before);
  if (!node) throw new Error(`no node -e before the piped curl: ${before.slice(-200)}`);
  const args = [...node[2]!.matchAll(/"([^"]*)"|([^\s"]+)/g)].map(([, quoted, bare]) => {
    const word = expand(quoted ?? bare!, env);
    if (!word.startsWith('/tmp/')) return word;
    const file = path.join(repoDir, path.basename(word));
    fs.writeFileSync(file, word.endsWith('.json') ? '[{"path":"src/x.ts","line":4,"body":"nit"}]' : 'The text.\n');
    return file;
  });
  return execFileSync(process.execPath, ['-e', node[1]!, ...args], { encoding: 'utf8' });
}

function callsOf(prompt: string, env: Record<string, string>): Call[] {
  const joined = prompt.replace(/\\\n\s*/g, ' ');
  return [...joined.matchAll(/\bcurl\s[^|\n`]*/g)].map((match) => {
    const command = match[0];
    const words = [...command.matchAll(/"([^"]*)"/g)].map((m) => m[1]!);
    const url = words.map((w) => expand(w, env)).find((w) => /^https?:\/\//.test(w));
    if (!url) throw new Error(`no URL in ${command}`);
    const explicit = /-X\s+([A-Z]+)/.exec(command)?.[1];
    const data = /(?:-d|--data)\s+'([^']*)'/.exec(command)?.[1];
    const piped = /--data-binary\s+@-/.test(command);
    const lineStart = joined.lastIndexOf('\n', match.index) + 1;
    const body = piped ? pipedBody(joined.slice(lineStart, match.index), env) : (data ?? '{}');
    return { command, method: explicit ?? (data !== undefined || piped ? 'POST' : 'GET'), url, body };
  });
}

let repoDir: string;
beforeAll(() => {
  repoDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-prompt-forges-'));
});
afterAll(() => fs.rmSync(repoDir, { recursive: true, force: true }));

/** The gateway of all three forges, whose forge side answers every request it is passed with 200. */
function gateway() {
  const passed: string[] = [];
  const stages = defaultStages();
  let current: Run | null = null;
  const app = forgeGatewayRoutes({
    forges: {
      gitea: { dialect: giteaDialect({ forgeUrl: 'http://gitea.test' }), tokens: { dev: 'dev-token', review: 'review-token' } },
      github: {
        dialect: githubDialect({ apiUrl: 'http://github.test/api/v3', gitUrl: 'http://github.test' }),
        tokens: { dev: 'dev-token', review: 'review-token' },
      },
      gitlab: {
        dialect: gitlabDialect({ apiUrl: 'http://gitlab.test/api/v4', gitUrl: 'http://gitlab.test' }),
        tokens: { dev: 'dev-token', review: 'review-token' },
      },
    },
    callbackTokens: { verifyByTokenHash: async (runId, matches) => (runId === RUN_ID && matches(CALLBACK_HASH) ? current : null) },
    // The refusal's line in the run's log; the test reads the gateway's answer instead.
    engine: { appendProgress: async () => ({ cut: { lines: 0, bytes: 0 } }) as unknown as ProgressAppended },
    logger: { warn: () => {}, info: () => {} },
    rightsOf: (run) => {
      const stage = stages.find((s) => s.name === run.stage)!;
      return { push: pushRulesOf(stage), merge: mayMergeOf(stage) };
    },
    fetch: async (input) => {
      passed.push(String(input));
      // A merge request read back (GitLab's reviewer state needs it of a run on an issue) is the issue's own: its branch names #12.
      return new Response(
        JSON.stringify({ id: 42, default_branch: 'main', user: { login: 'claude-dev' }, source_branch: 'feature/issue-12-x' }),
        {
          status: 200,
          headers: { 'content-type': 'application/json' },
        },
      );
    },
  });
  return {
    passed,
    /** The run of `stage` on `forge`, as the gateway will see it. */
    runOf(stage: string, forge: PromptForge) {
      const definition = stages.find((s) => s.name === stage)!;
      current = {
        id: RUN_ID,
        status: 'running',
        stage,
        forge,
        owner: 'acme',
        repo: 'app',
        number: 12,
        payload: { account: definition.account, isPull: stage === 'review-code' || stage === 'rework-pr', headRef: 'feature/issue-12-x' },
      } as unknown as Run;
    },
    send: (call: Call, capability: string) =>
      app.request(call.url.slice(BASE.length - '/gateway'.length), {
        method: call.method,
        headers: { authorization: `token ${capability}`, 'content-type': 'application/json' },
        ...(call.method === 'GET' ? {} : { body: call.body }),
      }),
  };
}

describe('the built-in prompts on each forge', () => {
  const gw = gateway();
  const capability = capabilityFor(RUN_ID, CALLBACK_HASH);

  it.each(STAGES.flatMap((stage) => PROMPT_FORGES.map((forge) => [stage, forge] as const)))(
    '%s on %s asks only for what the gateway lets the stage do',
    async (stage, forge) => {
      const { prompt } = await resolvePrompt({ repoDir, stage, args: stage === 'devops' ? 'staging' : '12', forge });
      expect(prompt).not.toMatch(/\{\{forge/);
      // Variables the prompt's own blocks set (a review's verdict), as the block sets them.
      const env = {
        ...agentEnv(forge, capability),
        ...Object.fromEntries([...prompt.matchAll(/^(EVENT|VERDICT)=(\S+)/gm)].map((m) => [m[1]!, m[2]!])),
      };
      const calls = callsOf(prompt, env);
      expect(calls.length, 'API calls in the prompt').toBeGreaterThan(0);
      gw.runOf(stage, forge);
      for (const call of calls) {
        const answer = await gw.send(call, capability);
        expect(answer.status, `${call.command}\n${await answer.text()}`).toBe(200);
      }
      if (forge !== 'gitea') {
        expect(prompt).not.toMatch(/\/api\/v1|GITEA_(URL|TOKEN|ORG|REPO)|Authorization: token/);
        // The capability is only in the forge's own names.
        for (const call of calls) expect(call.command).toContain(forge === 'github' ? '$GH_TOKEN' : '$GITLAB_TOKEN');
      }
    },
  );

  it('names each forge’s own API in its prompts', async () => {
    const render = async (forge: PromptForge) => (await resolvePrompt({ repoDir, stage: 'analyse', args: '5', forge })).prompt;
    expect(await render('gitea')).toContain('"$GITEA_URL/api/v1/repos/$GITEA_ORG/$GITEA_REPO/issues/5/comments"');
    expect(await render('github')).toContain('"$GITHUB_API_URL/repos/$GITHUB_REPOSITORY/issues/5/comments"');
    expect(await render('github')).toContain('the `gh` CLI');
    expect(await render('gitlab')).toContain('"$CI_API_V4_URL/projects/${CI_PROJECT_PATH//\\//%2F}/issues/5/notes"');
    expect(await render('gitlab')).toContain('-d \'{"add_labels":"ready-for-architecture"}\'');
  });
});

describe('the forge steps’ documentation', () => {
  it('lists every step in docs/pipeline.md', () => {
    const doc = fs.readFileSync(path.join(import.meta.dirname, '../../docs/pipeline.md'), 'utf8');
    for (const { name } of forgeStepNames()) expect(doc, name).toMatch(new RegExp(`\\| \`\\{\\{forge\\.${name}[ }]`));
  });
});

describe('forge steps in a repository’s own prompt', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-prompt-steps-'));
    fs.mkdirSync(path.join(dir, '.claude', 'commands'), { recursive: true });
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (stage: string, text: string) => fs.writeFileSync(path.join(dir, '.claude', 'commands', `${stage}.md`), text);

  it('is used as written when it has none, whatever the forge', async () => {
    const text = 'Comment with curl "$GITEA_URL/api/v1/repos/$GITEA_ORG/$GITEA_REPO/issues/$ARGUMENTS/comments" ${{ not ours }}';
    write('develop', text);
    for (const forge of PROMPT_FORGES)
      expect((await resolvePrompt({ repoDir: dir, stage: 'develop', args: '4', forge })).prompt).toBe(text.replace('$ARGUMENTS', '4'));
  });

  it('gets the forge’s commands, indented as the step is', async () => {
    write('analyse', '- Label it:\n\n  ```bash\n  {{forge.label $ARGUMENTS triaged}}\n  ```\n');
    const { prompt } = await resolvePrompt({ repoDir: dir, stage: 'analyse', args: '4', forge: 'github' });
    expect(prompt).toBe(
      [
        '- Label it:',
        '',
        '  ```bash',
        '  curl -fsS -X POST -H "Authorization: Bearer $GH_TOKEN" -H "Content-Type: application/json" \\',
        '    -d \'{"labels":["triaged"]}\' \\',
        '    "$GITHUB_API_URL/repos/$GITHUB_REPOSITORY/issues/4/labels"',
        '  ```',
      ].join('\n'),
    );
  });

  it.each([
    ['an unknown step', '{{forge.telepathy 3}}', 'names no forge step'],
    ['a missing argument', '{{forge.comment 3}}', 'takes 2 argument(s) (issue, file), got 1'],
  ])('refuses %s, naming the file', async (_case, text, reason) => {
    write('architect', text);
    const error = await resolvePrompt({ repoDir: dir, stage: 'architect', args: '1', forge: 'gitlab' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandFileError);
    expect((error as Error).message).toContain('.claude/commands/architect.md');
    expect((error as Error).message).toContain(reason);
  });
});
