import { RetryLaterError } from '../../background/index.js';
import type { ChatCommand, ForgeEvent } from '../../pipeline/index.js';
import type { Run } from '../../runs/index.js';
import type { TransactionScope } from '../../store/index.js';
import { canWrite } from '../permissions.js';
import { readCommandContext, refuseCommand, runCommand } from './commands.js';
import { messageOf } from './normalize.js';
import { PERMISSION_HELP, readPermissionFailure } from './permission-answer.js';
import type { DeliveryProcessorDeps, RunAnswer } from './process.js';
import { DELIVERY_OUTCOME, type DeliveryVerdict } from './types.js';

// The deliveries that talk to baton rather than trigger a stage: a ChatOps command, and the reply
// that resumes a run waiting for an answer.

type ChatDeps = NonNullable<DeliveryProcessorDeps['commands']>;

/** Records the delivery's verdict with what it writes (process.ts, `record`). */
export type Finish = (
  verdict: DeliveryVerdict,
  write?: (scope: TransactionScope) => Promise<RunAnswer[]>,
) => Promise<DeliveryVerdict & { runs: RunAnswer[] }>;

/** Whether the sender is one of baton's bots or an ignored user. */
export function isFromBot(pipeline: DeliveryProcessorDeps['pipeline'], event: ForgeEvent): boolean {
  const sender = event.sender.toLowerCase();
  return pipeline.botUsers.includes(sender) || pipeline.ignoreUsers.includes(sender);
}

/**
 * A command: from a bot or an ignored user it is nothing (a bot's reply quoting the help must
 * not loop); from someone without write access it gets a reply saying so; otherwise it is
 * carried out with its reaction and reply, in the verdict's transaction.
 */
export async function processCommand(
  deps: DeliveryProcessorDeps,
  commands: ChatDeps,
  finish: Finish,
  deliveryId: number,
  event: ForgeEvent & { number: number },
  command: ChatCommand,
  copied: boolean,
) {
  const sender = event.sender.toLowerCase();
  // The comment's author too: GitHub's `comment.user` and `sender` are one account, but a bot's
  // comment must never be a command whatever a payload says.
  const author = event.comment?.author.toLowerCase() ?? sender;
  const fromBot = deps.pipeline.botUsers.includes(sender) || deps.pipeline.botUsers.includes(author);
  if (fromBot || deps.pipeline.ignoreUsers.includes(sender)) {
    return finish({
      outcome: DELIVERY_OUTCOME.ignored,
      verdict: `ignored: command from ${fromBot ? 'a bot' : 'an ignored user'}`,
    });
  }
  if (copied) return finish({ outcome: DELIVERY_OUTCOME.duplicate, verdict: 'duplicate: an earlier copy of this command was taken' });
  let permitted = false;
  try {
    permitted = canWrite(await commands.permissionOf(event.owner, event.repo, event.sender, event.forge));
    deps.onPermissionProblem?.(null);
  } catch (err) {
    const failure = readPermissionFailure(err);
    if (failure.kind === 'transient') {
      throw new RetryLaterError(`permission lookup failed: ${failure.message}`, { delayMs: failure.retryAfterMs, cause: err });
    }
    if (failure.kind === 'misconfigured') {
      return finish({
        outcome: DELIVERY_OUTCOME.misconfigured,
        verdict: `misconfigured: the forge refused the permission lookup of a command (${failure.message}); ${PERMISSION_HELP}`,
      });
    }
  }
  if (!permitted) {
    return finish(
      {
        outcome: DELIVERY_OUTCOME.notPermitted,
        verdict: `not permitted: ${event.sender} lacks write permission for a command; ${PERMISSION_HELP}`,
      },
      async (scope) => {
        await refuseCommand(commands, scope, event);
        return [];
      },
    );
  }
  const context = await readCommandContext(commands, event, command).catch((err: unknown) => {
    throw new RetryLaterError(`could not read the issue's runs: ${messageOf(err)}`, { cause: err });
  });
  const verdict: DeliveryVerdict = { outcome: DELIVERY_OUTCOME.command, verdict: `command ${command.name}` };
  return finish(verdict, async (scope) => {
    const result = await runCommand(commands, scope, event, command, context, deps.pipeline, `delivery-${deliveryId}`);
    if (!result) {
      // Taken already: catch-up delivered the comment again after its webhook (or the reverse).
      Object.assign(verdict, { outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate: command ${command.name} already taken` });
      return [];
    }
    const said = `command ${command.name}: ${result.reply.split('\n')[0]!.slice(0, 200)}`;
    verdict.verdict = said;
    return result.runIds.map((runId, i) => ({ stage: result.stages[i]!, runId, outcome: 'queued' as const, reason: said }));
  });
}

/**
 * A reply to a waiting run's question, from someone with write access, resumes its session;
 * anyone else's comment does not (and starts nothing either: the issue waits for its answer).
 */
export async function processReply(commands: ChatDeps, finish: Finish, event: ForgeEvent, run: Run) {
  let permitted = false;
  try {
    permitted = canWrite(await commands.permissionOf(event.owner, event.repo, event.sender, event.forge));
  } catch (err) {
    const failure = readPermissionFailure(err);
    if (failure.kind === 'transient') {
      throw new RetryLaterError(`permission lookup failed: ${failure.message}`, { delayMs: failure.retryAfterMs, cause: err });
    }
  }
  if (!permitted) {
    return finish({
      outcome: DELIVERY_OUTCOME.notPermitted,
      verdict: `not permitted: ${event.sender} may not answer run ${run.id}'s question; ${PERMISSION_HELP}`,
    });
  }
  return finish({ outcome: DELIVERY_OUTCOME.started, verdict: `reply resumes run ${run.id}` }, async (scope) => {
    const resumed = await commands.engine.resumeIn(scope, run.id, { text: event.comment?.body ?? '', by: event.sender });
    return [
      {
        stage: resumed.stage,
        runId: resumed.id,
        outcome: 'queued' as const,
        reason: `reply by ${event.sender} resumes run ${resumed.id}`,
      },
    ];
  });
}
