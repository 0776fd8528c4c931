import os from 'node:os';
import type { AgentAdapter } from '../agents/index.js';
import type { AgentUsage, AskedQuestion, RunnerResume } from '../runner-contract/index.js';
import type { AgentLog } from './agent-log.js';
import { passes, type StepRunner } from './checkout.js';
import {
  askEnv,
  clearQuestion,
  collectSessionFiles,
  createTranscriptClient,
  packTranscript,
  readQuestion,
  readStream,
  restoreSessionFiles,
  TRANSCRIPT_FORMAT,
  unpackTranscript,
  type Transcript,
  type TranscriptClient,
  type TranscriptTurn,
} from './conversation.js';
import { RunFailure } from './errors.js';

/**
 * One turn of a conversation, as `runAgent` drives it: `open` before the checkout (a resumed
 * turn reads its transcript and learns its branch), `restore` once the repository is there,
 * `agentEnv` for the agent process, and `close` once it ended: a question is pushed, uploaded
 * and becomes the completion's `question`; every other turn's end is uploaded too (its stream
 * only), so the kept transcript holds the whole conversation of every run.
 */
export interface ConversationTurn {
  /** The branch to check out: the one the session worked on, for a resumed turn. */
  readonly branch: string | undefined;
  /** What the agent CLI is resumed with, or null for a first turn. */
  readonly resume: { sessionId: string; prompt: string } | null;
  /** Writes the session files where the CLI looks for them (resumed turns). */
  restore(cwd: string): void;
  /** PATH with `baton` first, and where `baton ask` writes. */
  agentEnv(basePath: string | undefined): Record<string, string>;
  /**
   * After the agent: the question to report (null: none, or it could not be kept, which the
   * log says; the run then ends as its agent did).
   */
  close(input: {
    exec: StepRunner;
    cwd: string;
    gitEnv: NodeJS.ProcessEnv;
    prompt: string;
    sessionId: string | null;
    streamFile: string;
    /** Whether the agent's turn may end in a question (no limit stopped it). */
    canAsk: boolean;
    /** The turn's tokens and cost, as the agent reported them (or baton priced them). */
    usage?: AgentUsage | null;
    costUsd?: number | null;
    startedAt?: number;
  }): Promise<AskedQuestion | null>;
}

export async function openConversationTurn(options: {
  adapter: AgentAdapter;
  stateDir: string;
  home: string | undefined;
  log: AgentLog;
  resume: RunnerResume | undefined;
  branch: string | undefined;
  callbackUrl: string;
  token: string;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}): Promise<ConversationTurn> {
  const { adapter, stateDir, log } = options;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const home = options.home ?? os.homedir();
  const client: TranscriptClient = createTranscriptClient({
    callbackUrl: options.callbackUrl,
    token: options.token,
    fetch: options.fetch,
    sleep,
    now: options.now,
    log: (line) => log.write(line),
  });
  clearQuestion(stateDir);
  const earlier = options.resume ? await earlierTranscript(client, options.resume, log) : null;
  const resume = options.resume
    ? { sessionId: options.resume.sessionId, prompt: `Reply from @${options.resume.by} to your question:\n\n${options.resume.reply}` }
    : null;

  return {
    branch: earlier?.header.branch ?? options.branch,
    resume,
    restore(cwd) {
      if (!earlier) return;
      if (earlier.header.cwd !== cwd) {
        log.write(
          `[baton] warning: the session was recorded in ${earlier.header.cwd}, this workspace works in ${cwd}; ` +
            `${adapter.title} finds a session only from the same directory`,
        );
      }
      try {
        const n = restoreSessionFiles(adapter, home, earlier);
        log.write(`[baton] restored ${n} session file(s) of ${adapter.title}`);
      } catch (err) {
        throw new RunFailure(`cannot resume the session: ${(err as Error).message}`, { cause: err });
      }
    },
    agentEnv: (basePath) => askEnv(stateDir, basePath),
    async close(input) {
      let asked = readQuestion(stateDir);
      if (asked && !input.canAsk) {
        log.write('[baton] the agent asked a question, but the run was stopped: the question is dropped');
        asked = null;
      }
      if (asked && !input.sessionId) {
        log.write(`[baton] the agent asked a question, but ${adapter.title} reported no session to resume: the question is dropped`);
        asked = null;
      }
      // Every turn's stream is kept (the dashboard and `baton logs --transcript` show it); only a
      // turn that asked needs its branch pushed and the CLI's session files for the next one.
      const branch = asked
        ? await pushBranch(input.exec, input.cwd, input.gitEnv, log, sleep, options.now ?? Date.now)
        : await currentBranch(input.exec, input.cwd);
      const { lines, truncated, cutLines, cutAt } = readStream(input.streamFile);
      const turn: TranscriptTurn = {
        turn: (earlier?.turns.length ?? 0) + 1,
        prompt: log.mask(resume ? resume.prompt : input.prompt),
        by: options.resume?.by ?? 'baton',
        ...(options.resume ? { reply: log.mask(options.resume.reply) } : {}),
        question: asked?.text ?? null,
        stream: lines,
        truncated,
        ...(truncated ? { cutLines, cutAt } : {}),
        usage: input.usage ?? null,
        costUsd: input.costUsd ?? null,
        startedAt: input.startedAt,
        endedAt: Date.now(),
      };
      const sessionId = input.sessionId ?? earlier?.header.sessionId ?? '';
      const transcript: Transcript = {
        header: { format: TRANSCRIPT_FORMAT, version: 1, agent: adapter.name, cwd: input.cwd, sessionId, branch },
        // A turn that did not ask keeps the session files it was resumed from: the retry of a
        // turn that failed for a reason that passes resumes from them (without, the CLI would
        // find no session); a first turn that did not ask has none to keep.
        files: asked ? collectSessionFiles(adapter, home, input.cwd) : (earlier?.files ?? []),
        turns: [...(earlier?.turns ?? []), turn],
      };
      // A run's only turn is for reading afterwards (its log has the same lines): one retry, so a
      // server that is away does not hold the completion up; a conversation's turn tries harder.
      const kept = await client.upload(packTranscript(transcript), asked || earlier ? {} : { attempts: 2 });
      if (!asked) return null;
      if (!kept) {
        log.write('[baton] the question cannot wait for a reply without its transcript: the run ends as its agent did');
        return null;
      }
      log.write(`[baton] the agent asked: ${asked.text.split('\n')[0]?.slice(0, 200) ?? ''}`);
      return { text: asked.text, sessionId: input.sessionId!, ...(asked.for ? { for: asked.for } : {}) };
    },
  };
}

/** The transcript of the turns before the one a reply resumes, from baton; a run failure when it cannot be had. */
async function earlierTranscript(client: TranscriptClient, resume: RunnerResume, log: AgentLog): Promise<Transcript> {
  const raw = await client.download().catch((err: unknown) => {
    throw new RunFailure(`cannot resume the session: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  });
  if (!raw) throw new RunFailure('cannot resume the session: baton kept no transcript of it');
  let earlier: Transcript;
  try {
    earlier = unpackTranscript(raw);
  } catch (err) {
    throw new RunFailure(`cannot resume the session: its transcript is unreadable (${(err as Error).message})`, { cause: err });
  }
  log.write(
    `[baton] resuming session ${resume.sessionId} (turn ${earlier.turns.length + 1}) with the reply of ${resume.by}` +
      (earlier.header.branch ? ` on branch ${earlier.header.branch}` : ''),
  );
  return earlier;
}

/** The branch checked out (null: detached HEAD). */
async function currentBranch(exec: StepRunner, cwd: string): Promise<string | null> {
  const head = await exec('git symbolic-ref', 'git', ['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd });
  const name = head.code === 0 ? head.tail.at(-1)?.trim() : undefined;
  return name && /^[\w./-]{1,200}$/.test(name) && !name.startsWith('-') ? name : null;
}

/** Longest time spent pushing the asking turn's branch again while the push fails for a reason that passes. */
const PUSH_RETRY_MS = 15 * 60_000;

/**
 * Pushes the working branch so the next turn's fresh workspace finds the agent's commits; work
 * not committed is named in the log (it does not survive the workspace). The push goes through
 * baton (the forge gateway), so a baton restarting or a forge away must not lose the turn's
 * commits: a push that fails for a reason that passes (git's words for an unreachable server or a
 * 5xx, checkout.ts) is tried again, as long as the transcript upload after it would wait.
 */
async function pushBranch(
  exec: StepRunner,
  cwd: string,
  gitEnv: NodeJS.ProcessEnv,
  log: AgentLog,
  sleep: (ms: number) => Promise<void>,
  now: () => number,
): Promise<string | null> {
  const branch = await currentBranch(exec, cwd);
  const status = await exec('git status', 'git', ['status', '--porcelain'], { cwd });
  const dirty = status.tail.filter((l) => l.trim() !== '').length;
  if (dirty > 0) log.write(`[baton] warning: ${dirty} uncommitted change(s) are not kept for the next turn (commit them before asking)`);
  if (!branch) {
    log.write('[baton] HEAD is detached: no branch to push for the next turn');
    return null;
  }
  const started = now();
  for (let attempt = 1; ; attempt++) {
    const push = await exec('git push', 'git', ['push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`], { cwd, env: gitEnv });
    if (push.code === 0) {
      log.write(`[baton] pushed branch ${branch} for the next turn`);
      return branch;
    }
    const delay = Math.min(1_000 * 2 ** (attempt - 1), 30_000);
    if (!passes(push) || now() - started + delay > PUSH_RETRY_MS) {
      log.write(`[baton] warning: pushing branch ${branch} failed (exit ${push.code}): the next turn starts from what origin has`);
      return branch;
    }
    log.write(`[baton] pushing branch ${branch} failed for a reason that passes; trying again`);
    await sleep(delay);
  }
}
