import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { until } from '../helpers/until.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import type { Delivery } from '../../src/ingress/index.js';

/**
 * Every agent through the real `baton serve`: one stage per agent (Claude Code, Codex CLI, Gemini
 * CLI, OpenCode; each stage's `agent` in baton.yaml, each CLI a fake that parses argv and prints
 * its stream as the real one does, test/fakes/agent/SOURCES.md), in the real sandbox with the real
 * `baton agent`. Each agent's issue ends with its summary, tokens and cost on the issue; each
 * failure kind of each agent ends with its reason; a transient one is retried; the token cap and
 * the duration limit stop each agent; OpenCode's reported cost is checked against the price table (agents-pipeline.test.ts runs one issue through analyse on one agent and develop on
 * another). One server, every issue at once (the fakes pick their behaviour per issue from the
 * repository's .fake-*.json).
 */

const FAKES = path.dirname(fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url)));
const fake = (name: string) => [process.execPath, path.join(FAKES, `fake-${name}.mjs`)];
const SECRET = 'e2e-agents-webhook-secret';
const DEV_TOKEN = 'e2e-agents-dev-token-0123456789';
const REVIEW_TOKEN = 'e2e-agents-review-token-0123456789';
const KEYS = { codex: 'sk-proj-e2e-codex-key-0123', gemini: 'AIza-e2e-gemini-key-0123', opencode: 'sk-ant-e2e-opencode-key-0123' };
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];
const AGENTS = ['claude', 'codex', 'gemini', 'opencode'] as const;
type Agent = (typeof AGENTS)[number];

/** What each case is called in each fake (FAKE_CLAUDE_MODE / FAKE_AGENT_MODE), and the kind it must end with. */
const FAILURES: Record<string, { kind: string; modes: Partial<Record<Agent, string>>; overrides?: Partial<Record<Agent, string>> }> = {
  auth: {
    kind: 'agent_auth_failed',
    modes: { claude: 'not-logged-in', codex: 'auth', gemini: 'auth', opencode: 'auth' },
  },
  'rate limit': {
    kind: 'agent_rate_limited',
    modes: { claude: 'rate-limited', codex: 'rate-limited', gemini: 'rate-limited', opencode: 'rate-limited' },
  },
  overload: {
    kind: 'agent_overloaded',
    modes: { claude: 'api-error', codex: 'server-error', gemini: 'server-error', opencode: 'server-error' },
  },
  'no connection': {
    kind: 'agent_unreachable',
    modes: { claude: 'connection-error', codex: 'unreachable', gemini: 'unreachable', opencode: 'unreachable' },
  },
  'turn limit': { kind: 'agent_turn_limit', modes: { claude: 'error_max_turns', gemini: 'turn-limit' } },
  'bad input': { kind: 'agent_bad_input', modes: { gemini: 'bad-input' } },
  // OpenCode's stream had a finished step before it died: its own error, not a missing result.
  crash: {
    kind: 'no_result',
    modes: { claude: 'crash', codex: 'crash', gemini: 'crash', opencode: 'crash' },
    overrides: { opencode: 'agent_error' },
  },
};

/** The sentence each kind puts in the status comment (outbox/public-reasons.ts). */
const SENTENCES: Record<string, string> = {
  agent_auth_failed: 'The agent’s API refused its credentials',
  agent_rate_limited: 'The agent’s API refused more requests for now (rate limit).',
  agent_overloaded: 'The agent’s API was overloaded.',
  agent_unreachable: 'The agent could not reach its API.',
  agent_turn_limit: 'The agent reached its own limit of turns.',
  agent_bad_input: 'The agent refused its input',
  no_result: 'The agent stopped without reporting a result',
  agent_error: 'The agent reported an error.',
  token_cap: "The agent reached the run's token limit.",
  max_duration: "The agent reached the run's time limit.",
};

/** Each agent's success as it must read on the issue: summary, tokens (cache reads apart), cost. */
const SUCCESS: Record<Agent, { summary: string; tokens: RegExp; cost: string; costSource: string }> = {
  claude: {
    summary: 'Finished the task for: ',
    tokens: /tokens [\d,]+ in (\+ [\d,]+ cached )?\/ [\d,]+ out/,
    cost: 'cost $0.01 ·',
    costSource: 'reported',
  },
  codex: {
    summary: 'Codex: done with ',
    tokens: /tokens 315 in \+ 24,448 cached \/ 1,220 out/,
    // gpt-5-codex: 315 × 1.25 + 24,448 × 0.125 + 1,220 × 10 per million.
    cost: 'cost $0.02 (computed from tokens) ·',
    costSource: 'computed',
  },
  gemini: {
    summary: 'Gemini: done with ',
    tokens: /tokens 6,144 in \+ 12,288 cached \/ 912 out/,
    // gemini-2.5-flash: 6,144 × 0.3 + 12,288 × 0.075 + 912 × 2.5 per million.
    cost: 'cost $0.01 (computed from tokens) ·',
    costSource: 'computed',
  },
  opencode: {
    summary: 'OpenCode: done with ',
    tokens: /tokens 11,422 in \+ 11,000 cached \/ 275 out/,
    // Its own steps' costs, which agree with the price table's anthropic/claude-sonnet-4-5.
    cost: 'cost $0.04 ·',
    costSource: 'reported',
  },
};

interface Case {
  agent: Agent;
  name: string;
  mode: string;
  /** The stage: on-<agent>, slow-<agent> (a short duration limit) or retry-<agent> (two attempts). */
  stage: string;
  number: number;
}

// One issue per case.
const CASES: Case[] = [];
for (const agent of AGENTS) {
  const add = (name: string, mode: string, stage = `on-${agent}`) => CASES.push({ agent, name, mode, stage, number: CASES.length + 1 });
  add('success', 'success');
  for (const [name, failure] of Object.entries(FAILURES)) if (failure.modes[agent]) add(name, failure.modes[agent]);
  add('token cap', 'token-overrun');
  add('duration limit', 'hang', `slow-${agent}`);
  add('transient', 'rate-limited', `retry-${agent}`);
  if (agent === 'opencode') add('unpriced', 'unpriced');
}

describe('baton serve: every agent, first class', () => {
  let root: string;
  let gitea: FakeGitea;
  let server: ServeHandle;
  let store: Store;

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-agents-'));
    // Runs are sandboxed as nobody when this suite runs as root: they must reach the repositories.
    fs.chmodSync(root, 0o711);
    const repos = path.join(root, 'repos');
    fs.mkdirSync(path.join(repos, 'acme'), { recursive: true });
    const modes = (agents: readonly Agent[]) =>
      JSON.stringify({ modeByIssue: Object.fromEntries(CASES.filter((c) => agents.includes(c.agent)).map((c) => [c.number, c.mode])) });
    // The stages' prompts, the same for every agent (custom stages have no built-in one).
    const prompts = Object.fromEntries(
      AGENTS.flatMap((a) =>
        ['on', 'slow', 'retry'].map((p) => [`.claude/commands/${p}-${a}.md`, `Work on issue #$ARGUMENTS as ${p}-${a}.\n`]),
      ),
    );
    createBareRepo(path.join(repos, 'acme'), 'app', {
      develop: { ...prompts, '.fake-claude.json': modes(['claude']), '.fake-agent.json': modes(['codex', 'gemini', 'opencode']) },
    });
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    const gitConfig = path.join(home, '.gitconfig');
    fs.writeFileSync(
      gitConfig,
      [
        '[user]',
        '\tname = Baton E2E',
        '\temail = baton-e2e@example.invalid',
        `[url "file://${repos}/"]`,
        '\tinsteadOf = http://gitea.test/',
        // Runs reach git through the forge gateway, which passes it on to GITEA_CLONE_URL.
        '\tinsteadOf = http://baton.internal/gateway/',
        '[safe]',
        '\tdirectory = *',
        '',
      ].join('\n'),
    );
    const stage = (agent: Agent, prefix: string, extra = '') =>
      `    ${prefix}-${agent}: { agent: ${agent}, account: dev, success: result, triggers: [{ event: labeled, label: ${prefix}-${agent} }]${extra} }\n`;
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      `local:\n  readOnlyPaths: [${JSON.stringify(repos)}, ${JSON.stringify(FAKES)}]\n  gitConfig: ${JSON.stringify(gitConfig)}\n` +
        // One attempt: a transient failure ends the run at once (its retries are runs/retries.ts's).
        'limits:\n  tokenCap: 1000000\n  agentAttempts: 1\n' +
        'agents:\n' +
        `  claude: { command: ${JSON.stringify(fake('claude'))} }\n` +
        `  codex: { command: ${JSON.stringify(fake('codex'))}, model: gpt-5-codex }\n` +
        `  gemini: { command: ${JSON.stringify(fake('gemini'))}, model: gemini-2.5-flash }\n` +
        `  opencode: { command: ${JSON.stringify(fake('opencode'))}, model: anthropic/claude-sonnet-4-5 }\n` +
        'pipeline:\n  stages:\n' +
        AGENTS.map((a) => stage(a, 'on') + stage(a, 'slow', ', maxDurationMinutes: 0.1') + stage(a, 'retry', ', agentAttempts: 2')).join(
          '',
        ),
    );

    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addUser('claude-review', { token: REVIEW_TOKEN });
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    for (let n = 1; n <= CASES.length; n++) gitea.addIssue('acme', 'app', { title: `issue ${n}`, author: 'alice' });
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');

    server = await startServe(
      {
        HOME: home,
        HOST: '127.0.0.1',
        GITEA_URL: gitea.url,
        GITEA_CLONE_URL: 'http://gitea.test',
        GITEA_DEV_TOKEN: DEV_TOKEN,
        GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
        WEBHOOK_SECRET: SECRET,
        DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
        BATON_DATA_DIR: path.join(root, 'data'),
        QUEUE_CONCURRENCY: '6',
        BATON_CODEX_API_KEY: KEYS.codex,
        BATON_GEMINI_API_KEY: KEYS.gemini,
        BATON_OPENCODE_API_KEY: KEYS.opencode,
      },
      root,
    );
    store = createStore({ url: `sqlite:${path.join(root, 'baton.db')}` });
  }, 60_000);

  afterAll(async () => {
    try {
      await server?.stop('SIGTERM');
    } finally {
      await store?.close();
      await gitea?.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  async function send(payload: unknown, event: string, eventType = event): Promise<Delivery> {
    const body = toBody(payload);
    const headers = giteaHeaders(body, { event, eventType, secret: SECRET, delivery: randomUUID() });
    const res = await fetch(`${server.url}/webhook/gitea`, { method: 'POST', headers, body });
    const answer = (await res.json()) as { id?: number; spooled?: boolean };
    expect(res.status, JSON.stringify(answer)).toBe(202);
    return acceptedDelivery(store, answer, { body, headers });
  }

  /** A label newly on issue `number`; the stage it starts. */
  async function label(number: number, name: string): Promise<number> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body
    const payload = fixtureJson('issues-label_updated.json') as Record<string, any>;
    payload.number = number;
    payload.issue = {
      ...payload.issue,
      number,
      title: `issue ${number}`,
      state: 'open',
      labels: [{ id: number, name, color: '0e8a16', description: '', exclusive: false, is_archived: false, url: '' }],
    };
    const delivery = await send(payload, 'issues', 'issue_label');
    expect(delivery, JSON.stringify(delivery)).toMatchObject({ outcome: 'started' });
    return delivery.runIds[0]!;
  }

  const run = (id: number) => store.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const finished = (id: number) =>
    until(async () => {
      const row = await run(id);
      return TERMINAL.includes(row.status) ? row : null;
    }, `run ${id} to end`);
  const finalComment = (number: number, stage: string) =>
    until(
      () =>
        gitea
          .comments('acme', 'app', number)
          .find((c) => c.author === 'claude-dev' && /\*\* (finished|failed|timed out)/.test(c.body) && c.body.includes(`**${stage}**`)),
      `the final comment of ${stage} on #${number}`,
    );

  // Every case's run starts at once; each test then waits for its own.
  const started = new Map<number, Promise<number>>();
  const runOf = (c: Case) => {
    if (!started.has(c.number)) started.set(c.number, label(c.number, c.stage));
    return started.get(c.number)!;
  };
  beforeAll(async () => {
    await Promise.all(CASES.map(runOf));
  }, 120_000);

  for (const agent of AGENTS) {
    describe(agent, () => {
      const cases = CASES.filter((c) => c.agent === agent);

      it('runs its stage and ends with its summary, tokens and cost on the issue', async () => {
        const c = cases.find((x) => x.name === 'success')!;
        const id = await runOf(c);
        const done = await finished(id);
        expect(done, `${done.last_error}: ${done.summary}\n${server.output().slice(-3000)}`).toMatchObject({
          status: 'succeeded',
          stage: `on-${agent}`,
          cost_source: SUCCESS[agent].costSource,
        });
        const comment = await finalComment(c.number, `on-${agent}`);
        expect(comment.body).toContain(`✅ **on-${agent}** finished`);
        expect(comment.body).toMatch(SUCCESS[agent].tokens);
        expect(comment.body).toContain(SUCCESS[agent].cost);
        expect(comment.body).toContain(SUCCESS[agent].summary);
        for (const key of Object.values(KEYS)) expect(comment.body).not.toContain(key);
      }, 120_000);

      for (const c of cases.filter((x) => FAILURES[x.name])) {
        const kind = FAILURES[c.name]!.overrides?.[agent] ?? FAILURES[c.name]!.kind;
        it(`a failure (${c.name}) is ${kind}, with its reason on the issue and the CLI's words in the run`, async () => {
          const done = await finished(await runOf(c));
          expect(done, `${done.summary}\n${server.output().slice(-3000)}`).toMatchObject({ status: 'failed', last_error: kind });
          expect(done.summary).toBeTruthy();
          const comment = await finalComment(c.number, c.stage);
          expect(comment.body).toContain(`❌ **${c.stage}** failed`);
          expect(comment.body).toContain(SENTENCES[kind]);
        }, 120_000);
      }

      it('a transient failure is retried: the run goes back to the queue as its next attempt, the issue hears nothing yet', async () => {
        const c = cases.find((x) => x.name === 'transient')!;
        const id = await runOf(c);
        const retrying = await until(
          () =>
            store.db.selectFrom('run_events').selectAll().where('run_id', '=', id).where('type', '=', 'run:retrying').executeTakeFirst(),
          `run ${id} to be retried`,
        );
        expect(retrying.data, JSON.stringify(retrying)).toContain('agent_rate_limited');
        // The next attempt waits for the agent API's backoff (a minute at least): queued, attempt 2.
        expect(await run(id)).toMatchObject({ status: 'queued', agent_attempt: 2 });
        expect(gitea.comments('acme', 'app', c.number).filter((x) => /\*\* (finished|failed)/.test(x.body))).toEqual([]);
      }, 120_000);

      it('is stopped by the token cap', async () => {
        const c = cases.find((x) => x.name === 'token cap')!;
        const done = await finished(await runOf(c));
        expect(done, `${done.summary}\n${server.output().slice(-3000)}`).toMatchObject({ status: 'failed', last_error: 'token_cap' });
        expect((await finalComment(c.number, c.stage)).body).toContain(SENTENCES.token_cap);
      }, 120_000);

      if (agent === 'opencode')
        it('a reported cost far from the price of its tokens is refused: the computed cost counts, and the log says why', async () => {
          const c = cases.find((x) => x.name === 'unpriced')!;
          const id = await runOf(c);
          const done = await finished(id);
          expect(done, `${done.last_error}: ${done.summary}`).toMatchObject({ status: 'succeeded', cost_source: 'computed' });
          expect(Number(done.cost_usd)).toBeCloseTo(0.041691, 6);
          expect((await finalComment(c.number, c.stage)).body).toContain('cost $0.04 (computed from tokens) ·');
          const refusal = await store.db
            .selectFrom('run_events')
            .select('data')
            .where('run_id', '=', id)
            .where('data', 'like', '%refused the reported cost $0.0000%')
            .executeTakeFirst();
          expect(refusal, 'the refusal in the run log').toBeDefined();
        }, 120_000);

      it('is stopped by the duration limit', async () => {
        const c = cases.find((x) => x.name === 'duration limit')!;
        const done = await finished(await runOf(c));
        expect(done, `${done.summary}\n${server.output().slice(-3000)}`).toMatchObject({ status: 'timed_out', last_error: 'max_duration' });
        expect(done.summary).toContain('maximum duration');
        expect((await finalComment(c.number, c.stage)).body).toContain(SENTENCES.max_duration);
      }, 120_000);
    });
  }
});
