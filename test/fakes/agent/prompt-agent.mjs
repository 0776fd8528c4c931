#!/usr/bin/env node
// An agent that does what its prompt says, as a model would with its shell tool: it reads the
// prompt baton gave it (Claude Code's argv, `claude -p … -- "<prompt>"`, as src/agents/claude.ts
// builds it), takes the prompt's own fenced bash blocks for the steps named in PROMPT_AGENT_STEPS
// and runs each with bash, in the workspace, with the run's environment (the forge's variables,
// the proxy): nothing of the forge is known to this file. Then it ends like Claude Code
// (stream-json result): success when every step's block exited 0.
//
//   node prompt-agent.mjs [--steps comment,label] [--text "<what the comment says>"] <claude's argv>
//
// (the options come first, in BATON_AGENT_COMMAND: baton passes the agent only the run's variables).
// The steps (default `comment`):
//   comment   the block that posts a /tmp/<name>.md file (`node -e … /tmp/x.md | curl -X POST …`);
//             the agent first writes --text into that file
//   label     the block that adds a label (`-d '{"labels":…}'` or `-d '{"add_labels":…}'`)
//   review    the block that submits a review (it sets `EVENT=` or `VERDICT=`, as written: asking for
//             changes); the agent first writes --text into its /tmp/<name>.md file and `[]` (no
//             line comments) into its /tmp/<name>.json file
//
// Every step's block, exit status and output go into the result text, so a failed run says why.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const args = process.argv.slice(2);
const prompt = args.includes('--') ? args[args.indexOf('--') + 1] : fs.readFileSync(0, 'utf8');
const session = 'prompt-agent';
const emit = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
emit({ type: 'system', subtype: 'init', session_id: session, cwd: process.cwd(), tools: ['Bash'], model: 'prompt-agent' });

// Fenced bash blocks, indented ones (inside a list item) too, their indentation taken off.
const blocks = [...prompt.matchAll(/^([ \t]*)```bash\n([\s\S]*?)^\1```/gm)].map(([, indent, body]) =>
  body
    .split('\n')
    .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
    .join('\n'),
);
const STEPS = {
  comment: (b) => /\/tmp\/[\w.-]+\.md/.test(b) && /curl [^\n]*-X POST/.test(b) && /(comments|notes)"/.test(b),
  label: (b) => /-d '\{"(add_)?labels"/.test(b),
  review: (b) => /^(EVENT|VERDICT)=/m.test(b),
};
const option = (name, fallback) =>
  args.indexOf(name) >= 0 && args.indexOf(name) < args.indexOf('--') ? args[args.indexOf(name) + 1] : fallback;
const wanted = option('--steps', 'comment')
  .split(',')
  .map((s) => s.trim());
const done = [];
let failed = false;
for (const name of wanted) {
  const block = blocks.find(STEPS[name] ?? (() => false));
  if (!block) {
    done.push(`${name}: the prompt has no such step`);
    failed = true;
    continue;
  }
  const file = /\/tmp\/[\w.-]+\.md/.exec(block)?.[0];
  if ((name === 'comment' || name === 'review') && file) fs.writeFileSync(file, option('--text', 'The prompt agent was here.\n'));
  const comments = /\/tmp\/[\w.-]+\.json/.exec(block)?.[0];
  if (name === 'review' && comments) fs.writeFileSync(comments, '[]');
  emit({
    type: 'assistant',
    message: { role: 'assistant', content: [{ type: 'tool_use', id: name, name: 'Bash', input: { command: block } }] },
  });
  const run = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', block], { encoding: 'utf8' });
  done.push(`${name}: exit ${run.status}\n${block}\n${`${run.stdout}${run.stderr}`.slice(-1500)}`);
  if (run.status !== 0) failed = true;
}

emit({
  type: 'result',
  subtype: 'success',
  is_error: failed,
  num_turns: 1,
  session_id: session,
  result: done.join('\n---\n'),
  usage: { input_tokens: 1, output_tokens: 1 },
  total_cost_usd: 0,
});
process.exit(failed ? 1 : 0);
