import { accountKey, type ForgeAccounts } from '../forge/index.js';
import {
  forgeRepository,
  hookFor,
  isFinal,
  RUN_EVENT,
  type Run,
  type RunEvent,
  type RunEventType,
  type TransitionHook,
} from '../runs/index.js';
import type { CommentPayload } from './comment-delivery.js';
import {
  DEFAULT_COMMENT_TEMPLATES,
  renderCommentTemplate,
  type CommentPlaceholder,
  type CommentTemplateName,
  type CommentTemplates,
} from './comment-templates.js';
import type { Outbox } from './outbox.js';
import { publicReason } from './public-reasons.js';
import { OUTBOX_KIND, type NewOutboxEntry } from './types.js';

/** Which run events get a comment, and with which template. */
const TEMPLATE_FOR_EVENT: Readonly<Partial<Record<RunEventType, CommentTemplateName>>> = {
  [RUN_EVENT.queued]: 'queued',
  [RUN_EVENT.requeued]: 'queued',
  [RUN_EVENT.held]: 'held',
  [RUN_EVENT.started]: 'started',
  [RUN_EVENT.succeeded]: 'succeeded',
  [RUN_EVENT.failed]: 'failed',
  [RUN_EVENT.timedOut]: 'timed_out',
  [RUN_EVENT.cancelled]: 'cancelled',
  [RUN_EVENT.dead]: 'dead',
};

/** Gitea rejects very large comments; an agent's summary can be long. */
const MAX_VALUE_LENGTH = 20_000;
const MAX_BODY_LENGTH = 60_000;
const MASK = '********';

export interface StatusCommentHookOptions {
  /** From `config.comments` (baton.yaml's `comments:`). @default DEFAULT_COMMENT_TEMPLATES */
  templates?: CommentTemplates;
  /** Forge clients by bot name; with none configured no comments are queued. */
  accounts: ForgeAccounts;
  /** Bot used when the run names none, or one that has no account. @default 'dev' */
  defaultAccount?: string;
  /**
   * Values that must never appear in a comment (bot tokens, webhook secret, Coder token…); they
   * are masked wherever the agent's summary or an error message repeats them.
   */
  secrets?: readonly (string | undefined)[];
  /** The outbox to add entries through: its worker is woken as soon as the transition commits. */
  outbox: Pick<Outbox, 'enqueue'>;
  /** Attempts for comment entries. @default 20 */
  maxAttempts?: number;
}

/**
 * A run transition hook that queues status comments in the transition's own transaction: one
 * when a run is queued, when a spent budget holds it, and when it starts, and always one when it ends (succeeded, failed,
 * timed out, cancelled, dead). Runs without an issue or PR number (maintenance) get none, nor do
 * runs of repositories declared in baton.yaml (not on the forge).
 * The comment is posted by the run's bot account (`payload.account`, default `dev`), in order
 * per issue, by the outbox's `comment` handler.
 */
export function createStatusCommentHook(options: StatusCommentHookOptions): TransitionHook {
  const templates = options.templates ?? DEFAULT_COMMENT_TEMPLATES;
  const defaultAccount = options.defaultAccount ?? 'dev';
  const secrets = (options.secrets ?? []).filter((s): s is string => typeof s === 'string' && s.length >= 4);

  return hookFor([...(Object.keys(TEMPLATE_FOR_EVENT) as RunEventType[]), ...CONVERSATION_EVENTS], async (scope, { run, event }) => {
    const conversational = conversationComment(run, event);
    const name = TEMPLATE_FOR_EVENT[event.type];
    if ((!name && conversational === null) || run.number === null) return;
    // A repository declared in baton.yaml is not on the forge: there is no issue to comment on.
    if (run.payload.declared === true) return;
    // Re-queued from a final state is an operator's retry, worth saying on the issue; from
    // provisioning it is an expired lease, an internal detail.
    if (event.type === RUN_EVENT.requeued && !(event.fromStatus !== null && isFinal(event.fromStatus))) return;
    // One comment per outcome, not per attempt: a retried agent attempt starts silently.
    if (event.type === RUN_EVENT.started && run.agentAttempt > 1) return;
    // Only the run's own forge's accounts can comment there (Gitea's are named plainly, the
    // others `github:dev`); without one, no comment is queued.
    const forge = run.forge;
    const named = forge === 'github' || forge === 'gitlab';
    if (!Object.keys(options.accounts).some((key) => (named ? key.startsWith(`${forge}:`) : !key.includes(':')))) return;
    const template = name ? templates[name] : '';
    if (name && template.trim() === '') return;

    const values = commentValues(run, event);
    for (const key of Object.keys(values) as CommentPlaceholder[]) {
      // A copied delivery marker would make a retry of another entry believe it had posted.
      values[key] = redact(values[key], secrets).replace(/<!--\s*baton:outbox:\d+\s*-->/g, '');
    }
    let body = name
      ? renderCommentTemplate(template, values)
      : redact(conversational!, secrets).replace(/<!--\s*baton:outbox:\d+\s*-->/g, '');
    if (body.length > MAX_BODY_LENGTH) body = `${body.slice(0, MAX_BODY_LENGTH)}\n\n… (truncated)`;

    const requested = typeof run.payload.account === 'string' ? run.payload.account : defaultAccount;
    const account = accountKey(forge, options.accounts[accountKey(forge, requested)] ? requested : defaultAccount);
    const payload: CommentPayload = { account, owner: run.owner, repo: run.repo, number: run.number, body };
    // A GitLab merge request's number is not an issue's (`!7`, `#7`).
    if (forge === 'gitlab' && run.payload.isPull === true) payload.kind = 'pull';
    const entry: NewOutboxEntry = {
      kind: OUTBOX_KIND.comment,
      payload,
      orderingKey: `comment:${forgeRepository(forge, run.owner, run.repo)}${payload.kind === 'pull' ? '!' : '#'}${run.number}`,
      dedupKey: `status-comment:${run.id}:${event.id}`,
      runId: run.id,
      maxAttempts: options.maxAttempts,
    };
    await options.outbox.enqueue(scope, entry);
  });
}

/** The comments of a conversation (runs/conversation.ts): the question, and a question that got no reply. */
const CONVERSATION_EVENTS: readonly RunEventType[] = [RUN_EVENT.waiting, RUN_EVENT.expired];

function conversationComment(run: Run, event: RunEvent): string | null {
  if (event.type === RUN_EVENT.waiting) {
    const question = typeof event.data?.question === 'string' ? event.data.question : '';
    const forWhom = typeof event.data?.for === 'string' ? `@${event.data.for.replace(/^@/, '')} ` : '';
    const quoted = question
      .split('\n')
      .map((line) => `> ${line}`)
      .join('\n');
    return (
      `❓ **${run.stage}** (run ${run.id}) has a question${forWhom ? ` for ${forWhom.trim()}` : ''}:\n\n${quoted}\n\n` +
      'Reply in a comment to resume it (someone with write access; its session continues where it stopped). ' +
      '`@baton cancel` ends it.'
    );
  }
  if (event.type === RUN_EVENT.expired) {
    return `⌛ **${run.stage}** (run ${run.id}) waited for a reply to its question and got none in time: it ended \`expired\`. \`@baton retry\` starts it again.`;
  }
  return null;
}

function commentValues(run: Run, event: RunEvent): Record<CommentPlaceholder, string> {
  const duration = run.durationMs ?? (run.startedAt !== null && run.finishedAt !== null ? run.finishedAt - run.startedAt : null);
  const clip = (text: string) => (text.length > MAX_VALUE_LENGTH ? `${text.slice(0, MAX_VALUE_LENGTH)}… (truncated)` : text);
  return {
    stage: run.stage,
    runId: String(run.id),
    key: run.key,
    status: run.status,
    owner: run.owner,
    repo: run.repo,
    number: String(run.number ?? ''),
    workspace: run.workspaceName ?? '',
    trigger: typeof run.payload.trigger === 'string' ? run.payload.trigger : '',
    attempts: String(run.attempts),
    maxAttempts: String(run.maxAttempts),
    summary: clip(run.summary ?? ''),
    // In general terms only: the issue may be public, the details are in the API and dashboard.
    error: publicReason(run, event),
    duration: duration === null ? 'n/a' : formatDuration(duration),
    // A cost baton priced from the tokens (the CLI reports none) says so: it is an estimate.
    cost: run.costUsd === null ? 'n/a' : `$${run.costUsd.toFixed(2)}${run.costSource === 'computed' ? ' (computed from tokens)' : ''}`,
    tokens: formatTokens(run),
  };
}

export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s}s`;
  return `${s}s`;
}

function formatTokens(run: Run): string {
  const input = run.usage?.inputTokens;
  const output = run.usage?.outputTokens;
  if (typeof input !== 'number' && typeof output !== 'number') return 'n/a';
  const n = (v: number | undefined) => (typeof v === 'number' ? v.toLocaleString('en-US') : '0');
  const cached = run.usage?.cacheReadInputTokens;
  return `${n(input)} in${typeof cached === 'number' && cached > 0 ? ` + ${n(cached)} cached` : ''} / ${n(output)} out`;
}

/**
 * Masks known secrets, credentials in URLs and token-looking Authorization values. The agent's
 * summary and error texts come from a process that held these secrets.
 */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join(MASK);
  return out
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+):[^\s@/]+@/gi, `$1:${MASK}@`)
    .replace(
      /\b(authorization:\s*)?(token|bearer)\s+[A-Za-z0-9._~+/-]{16,}=*/gi,
      (_m, header: string | undefined, scheme: string) => `${header ?? ''}${scheme} ${MASK}`,
    );
}
