import type { RunPayload, TaskRequest } from '../runs/index.js';
import { manualRequest } from './manual.js';
import type { ForgeEvent, Pipeline } from './types.js';

/** What a comment mentioning baton may ask for. */
export const CHAT_COMMANDS = ['retry', 'cancel', 'run', 'status', 'help'] as const;
export type ChatCommandName = (typeof CHAT_COMMANDS)[number];

export type ChatCommand =
  | { name: 'retry' | 'cancel' | 'status' | 'help' }
  | { name: 'run'; stage: string; text: string }
  /** Anything else after the mention: answered with the help. */
  | { name: 'unknown'; word: string };

/** The mention a command starts with when `pipeline.mention` is not set. */
export const DEFAULT_MENTION = '@baton';

/** Longest `$ARGUMENTS` a `run` command hands to its stage: a comment is the commenter's to write. */
export const MAX_COMMAND_TEXT = 4_000;

/**
 * The command a comment gives, or null when it is not one. A command is a comment whose first
 * word is the mention (any case), so a comment that names baton in passing is a plain comment.
 * Only a new comment counts: editing a comment must not run its command again.
 */
export function commandOf(event: ForgeEvent, pipeline: Pipeline): ChatCommand | null {
  if ((event.kind !== 'issue_comment' && event.kind !== 'pr_comment') || event.action !== 'created' || !event.comment) return null;
  return parseCommand(event.comment.body, pipeline.mention ?? DEFAULT_MENTION);
}

export function parseCommand(body: string, mention: string): ChatCommand | null {
  const text = body.trimStart();
  const wanted = mention.toLowerCase();
  if (!text.toLowerCase().startsWith(wanted)) return null;
  const rest = text.slice(mention.length);
  // `@batonista` is someone else.
  if (rest !== '' && !/^[\s:,]/.test(rest)) return null;
  const words = rest.replace(/^[:,]/, '').trim();
  const match = /^(\S*)\s*([\s\S]*)$/.exec(words)!;
  const word = match[1]!.toLowerCase();
  const tail = match[2]!.trim();
  switch (word) {
    case 'retry':
    case 'cancel':
    case 'status':
    case 'help':
      return { name: word };
    case 'run': {
      const run = /^(\S+)\s*([\s\S]*)$/.exec(tail);
      if (!run) return { name: 'unknown', word: 'run' };
      return { name: 'run', stage: run[1]!.toLowerCase(), text: run[2]!.trim().slice(0, MAX_COMMAND_TEXT) };
    }
    default:
      return { name: 'unknown', word: word.slice(0, 40) };
  }
}

/** The reply to `help` and to an unknown command. */
export function chatHelp(pipeline: Pipeline): string {
  const m = pipeline.mention ?? DEFAULT_MENTION;
  return [
    `Commands (write access to the repository needed), each at the start of a comment:`,
    '',
    `- \`${m} retry\`: run the issue's last failed, dead, timed-out or cancelled run again`,
    `- \`${m} cancel\`: cancel the issue's queued, running or waiting run`,
    `- \`${m} run <stage> [text]\`: start a stage, the text as its \`$ARGUMENTS\` (stages: ${pipeline.stages.map((s) => `\`${s.name}\``).join(', ')})`,
    `- \`${m} status\`: the issue's stages and runs, with durations and cost`,
    `- \`${m} help\`: this list`,
  ].join('\n');
}

/**
 * The run a `run <stage> [text]` command asks for, shaped like a manual run on the issue, or the
 * known stage names when there is no such stage.
 */
export function commandRequest(
  event: ForgeEvent,
  pipeline: Pipeline,
  command: { stage: string; text: string },
): TaskRequest | { unknownStage: string[] } {
  const request = manualRequest(pipeline, {
    stage: command.stage,
    owner: event.owner,
    repo: event.repo,
    ...(event.number !== undefined ? { number: event.number } : {}),
    ...(command.text ? { arguments: command.text } : {}),
  });
  if ('unknownStage' in request) return request;
  const payload: RunPayload = {
    ...request.payload,
    trigger: `command by ${event.sender}`,
    sender: event.sender,
    event: event.kind,
    isPull: event.isPull,
  };
  if (event.htmlUrl) payload.htmlUrl = event.htmlUrl;
  if (event.title !== undefined) payload.title = event.title;
  if (event.headRef) payload.headRef = event.headRef;
  if (event.comment?.id !== undefined) payload.commentId = event.comment.id;
  const named: Pick<TaskRequest, 'forge' | 'mergeRequest'> = {};
  // As route.ts does: GitHub's and GitLab's runs name their forge in the key, and a GitLab merge
  // request's (`!7`) is not its issue's (`#7`).
  if (event.forge === 'github' || event.forge === 'gitlab') {
    named.forge = event.forge;
    if (event.forge === 'gitlab' && event.isPull) named.mergeRequest = true;
  }
  return { ...request, ...named, payload };
}
