/**
 * A turn's agent stream as a conversation: what the dashboard and `baton logs --transcript`
 * show. Claude Code's `stream-json` (../shared/reference/claude-code/STREAM-JSON.md) becomes the
 * assistant's messages, its tool calls with their results (matched by `tool_use_id`), and the
 * turn's result; message types this does not know are skipped, as the reference says to. Other
 * agents' streams have no shape baton reads here: each line is shown as output.
 *
 * Every text is the agent's, masked by its runner: shown, never interpreted. Each is cut at
 * `MAX_ENTRY_CHARS` so one huge tool result cannot make the answer huge; `cut` says so.
 */

export const TRANSCRIPT_ENTRY_KIND = {
  /** The assistant's text. */
  assistant: 'assistant',
  /** The assistant's thinking (shown folded). */
  thinking: 'thinking',
  /** A tool call, with its result once the stream has it. */
  tool: 'tool',
  /** The turn's end as the agent CLI reported it. */
  result: 'result',
  /** A notice of the CLI (an API retry). */
  notice: 'notice',
  /** A line that is not one of the above (another agent's output, or garbage). */
  output: 'output',
  /** Lines the runner cut from the middle of a long stream. */
  cut: 'cut',
} as const;

export type TranscriptEntry =
  | { kind: 'assistant' | 'thinking' | 'notice' | 'output'; text: string; cut?: true }
  | {
      kind: 'tool';
      id: string | null;
      name: string;
      /** The call's input, as JSON text. */
      input: string;
      result: string | null;
      isError: boolean;
      cut?: true;
    }
  | { kind: 'result'; text: string; isError: boolean; costUsd: number | null; numTurns: number | null; cut?: true }
  /** `lines` the runner cut from the stream, or `entries` past `MAX_ENTRIES` left out here. */
  | { kind: 'cut'; lines?: number; entries?: number };

/** Longest text of one entry. */
export const MAX_ENTRY_CHARS = 8_000;
/** Most entries of one turn; the rest are counted in a `cut` entry. */
export const MAX_ENTRIES = 2_000;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function clip(text: string): { text: string; cut?: true } {
  return text.length > MAX_ENTRY_CHARS ? { text: `${text.slice(0, MAX_ENTRY_CHARS)}…`, cut: true } : { text };
}

/** A tool result's content: a string, or blocks of which the text ones are read. */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? '' : JSON.stringify(content);
  return content
    .map((block) => (isObject(block) && typeof block.text === 'string' ? block.text : isObject(block) ? `[${String(block.type)}]` : ''))
    .filter((t) => t !== '')
    .join('\n');
}

/**
 * The entries of one turn's stream. `cutAt`/`cutLines`: where the runner cut lines from a long
 * stream, and how many (a `cut` entry marks the place).
 */
export function transcriptEntries(
  agent: string,
  lines: readonly string[],
  cut?: { at: number; lines: number } | null,
): { entries: TranscriptEntry[]; omitted: number } {
  const entries: TranscriptEntry[] = [];
  const tools = new Map<string, Extract<TranscriptEntry, { kind: 'tool' }>>();
  let omitted = 0;
  const push = (entry: TranscriptEntry) => {
    if (entries.length < MAX_ENTRIES) entries.push(entry);
    else omitted++;
  };
  lines.forEach((line, index) => {
    if (cut && cut.lines > 0 && index === cut.at) push({ kind: 'cut', lines: cut.lines });
    if (agent !== 'claude') {
      push({ kind: 'output', ...clip(line) });
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      push({ kind: 'output', ...clip(line) });
      return;
    }
    if (!isObject(message)) return;
    if (message.type === 'assistant' && isObject(message.message) && Array.isArray(message.message.content)) {
      for (const block of message.message.content) {
        if (!isObject(block)) continue;
        if (block.type === 'text' && typeof block.text === 'string' && block.text.trim() !== '') {
          push({ kind: 'assistant', ...clip(block.text) });
        } else if (block.type === 'thinking' && typeof block.thinking === 'string' && block.thinking.trim() !== '') {
          push({ kind: 'thinking', ...clip(block.thinking) });
        } else if (block.type === 'tool_use') {
          const input = clip(JSON.stringify(block.input ?? {}));
          const entry: Extract<TranscriptEntry, { kind: 'tool' }> = {
            kind: 'tool',
            id: typeof block.id === 'string' ? block.id : null,
            name: typeof block.name === 'string' ? block.name.slice(0, 200) : 'tool',
            input: input.text,
            result: null,
            isError: false,
            ...(input.cut ? { cut: true as const } : {}),
          };
          if (entry.id) tools.set(entry.id, entry);
          push(entry);
        }
      }
    } else if (message.type === 'user' && isObject(message.message) && Array.isArray(message.message.content)) {
      for (const block of message.message.content) {
        if (!isObject(block) || block.type !== 'tool_result') continue;
        const result = clip(resultText(block.content));
        const call = typeof block.tool_use_id === 'string' ? tools.get(block.tool_use_id) : undefined;
        if (call) {
          call.result = result.text;
          call.isError = block.is_error === true;
          if (result.cut) call.cut = true;
        } else {
          // A result whose call was cut from the stream: shown on its own.
          push({ kind: 'tool', id: null, name: 'tool', input: '', result: result.text, isError: block.is_error === true });
        }
      }
    } else if (message.type === 'result') {
      const errors = Array.isArray(message.errors) ? message.errors.filter((e): e is string => typeof e === 'string') : [];
      const text = typeof message.result === 'string' ? message.result : errors.join('\n');
      const cost = [message.total_cost_usd, message.total_cost].find((v): v is number => typeof v === 'number' && Number.isFinite(v));
      push({
        kind: 'result',
        ...clip(text),
        isError: message.is_error === true || (typeof message.subtype === 'string' && message.subtype !== 'success'),
        costUsd: cost ?? null,
        numTurns: typeof message.num_turns === 'number' ? message.num_turns : null,
      });
    } else if (message.type === 'system' && message.subtype === 'api_retry') {
      const attempt = typeof message.attempt === 'number' ? ` ${message.attempt}` : '';
      const error = typeof message.error === 'string' ? `: ${message.error.slice(0, 300)}` : '';
      push({ kind: 'notice', text: `API retry${attempt}${error}` });
    }
  });
  if (omitted > 0) entries.push({ kind: 'cut', entries: omitted });
  return { entries, omitted };
}
