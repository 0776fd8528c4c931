#!/usr/bin/env node
// fake-claude with its behaviour chosen per run, for the chaos suite (test/chaos/). A local run's
// agent gets only the run's variables (PATH, locale, ISSUE_NUMBER, …), never FAKE_CLAUDE_MODE from
// the test, so the mode comes from a plan file the test writes: `{ "<issue number>": "<mode>" }`.
// Its path is this script's first argument (BATON_AGENT_COMMAND='[node, chaos-agent.mjs, plan]'),
// removed before fake-claude reads the rest as claude's own arguments.
import fs from 'node:fs';

const plan = process.argv.splice(2, 1)[0];
const modes = plan ? JSON.parse(fs.readFileSync(plan, 'utf8')) : {};
process.env.FAKE_CLAUDE_MODE = modes[process.env.ISSUE_NUMBER ?? ''] ?? 'success';
await import('./fake-claude.mjs');
