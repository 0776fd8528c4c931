/** Left-aligned columns for people; scripts use --json. */
export function table(headers: string[], rows: Array<Array<string | number | null | undefined>>): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : (c ?? '').padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

export function formatDuration(ms: number): string {
  let s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return h ? `${h}h${m}m` : m ? `${m}m${s}s` : `${s}s`;
}

/**
 * Characters a terminal acts on rather than shows: C0 controls but newline and tab (ESC starts the
 * sequences that move the cursor, recolour, retitle or clear the screen; CR overwrites a line),
 * DEL, the C1 controls (U+009B is a one-character CSI), and the bidirectional overrides that
 * reorder what is shown. Agent and forge text passes through the CLI, so it must not drive the
 * operator's terminal.
 */
// eslint-disable-next-line no-control-regex
const TERMINAL_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with every terminal control shown as a visible `\uXXXX` escape. The same escape is valid
 * inside a JSON string, so `--json` output stays JSON and decodes to the original text.
 */
export function visible(text: string): string {
  return text.replace(TERMINAL_CONTROLS, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
