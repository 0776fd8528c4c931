import { parseArgs } from 'node:util';
import { createApiClient } from './api-client.js';
import { UsageError } from './args.js';
import { type CommandIo, visibleIo } from './io.js';
import { logsCommand } from './operator-commands.js';

const USAGE = 'usage: baton run STAGE --repo OWNER/REPO [--issue N] [--arg TEXT]… [--ref BRANCH] [--follow] [--json]';

export const RUN_HELP = `${USAGE}

Queues one run of a pipeline stage without a webhook (POST /api/runs) and prints its id.

Options:
  --repo OWNER/REPO   the repository: on the forge (GITEA_URL), or declared in baton.yaml (repositories:);
                      github:OWNER/REPO or gitlab:NAMESPACE/PROJECT on GitHub or GitLab
  --issue N           the issue or pull request the run is about
  --arg TEXT          what $ARGUMENTS stands for in the stage's prompt; repeat it to add words
                      (default: the issue number)
  --ref BRANCH        the branch to work on (default: develop, else the repository's default branch)
  --follow            print the run's log as it comes, until it ends; exit 0 only if it succeeded
  --json              print the API's answer as JSON
  -h, --help          show this help

Talks to a running baton: BATON_URL (default http://127.0.0.1:3000) and BATON_TOKEN.`;

interface SubmitAnswer {
  run: { id: number; stage: string; owner: string; repo: string; number: number | null; status: string };
  outcome: 'queued' | 'coalesced' | 'followup' | 'dropped';
  reason: string;
}

/** `baton run STAGE --repo OWNER/REPO …`: a manual run; with --follow, its log until it ends. */
export async function runCommand(argv: string[], rawIo: CommandIo): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    throw new UsageError(`baton run: ${(err as Error).message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(RUN_HELP);
    return 0;
  }
  const [stage, extra] = positionals;
  if (!stage) throw new UsageError(`baton run needs a stage name\n${USAGE}`);
  if (extra !== undefined) throw new UsageError(`baton run: unexpected argument "${extra}"\n${USAGE}`);
  if (!values.repo) throw new UsageError(`baton run needs --repo OWNER/REPO\n${USAGE}`);
  const body: Record<string, unknown> = { stage, repository: values.repo };
  if (values.issue !== undefined) {
    if (!/^\d{1,15}$/.test(values.issue) || Number(values.issue) < 1)
      throw new UsageError(`baton run: --issue must be a positive whole number, got "${values.issue}"\n${USAGE}`);
    body.number = Number(values.issue);
  }
  if (values.arg?.length) body.arguments = values.arg.join(' ');
  if (values.ref !== undefined) body.ref = values.ref;

  const api = createApiClient(io);
  const answer = await api.post<SubmitAnswer>('/api/runs', body);
  const { run } = answer;
  if (values.json) io.out(JSON.stringify(answer, null, 2));
  else {
    const target = `${run.owner}/${run.repo}${run.number === null ? '' : `#${run.number}`}`;
    io.out(`run #${run.id} ${answer.outcome === 'queued' ? 'queued' : answer.reason}: ${run.stage} ${target}`);
    if (!values.follow) io.out(`follow it with: baton logs ${run.id} --follow`);
  }
  if (!values.follow) return 0;
  await logsCommand([String(run.id), '--follow'], io);
  const { run: final } = await api.get<{ run: { status: string } }>(`/api/runs/${run.id}`);
  return final.status === 'succeeded' ? 0 : 1;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      repo: { type: 'string' },
      issue: { type: 'string' },
      arg: { type: 'string', multiple: true },
      ref: { type: 'string' },
      follow: { type: 'boolean', short: 'f' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: true,
  });
}
