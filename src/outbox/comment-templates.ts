import { show } from '../config/index.js';

/**
 * Status comment texts. `baton.yaml` may override any of them under `comments:`; each is Markdown
 * with `{{placeholder}}`s filled from the run:
 *
 * | placeholder | value |
 * | --- | --- |
 * | `{{stage}}`, `{{runId}}`, `{{key}}`, `{{status}}` | the run |
 * | `{{owner}}`, `{{repo}}`, `{{number}}` | where it runs |
 * | `{{workspace}}` | workspace name (empty before provisioning) |
 * | `{{trigger}}` | what started it, e.g. "label ready-for-development added by alice" |
 * | `{{attempts}}`, `{{maxAttempts}}` | provisioning attempts |
 * | `{{summary}}` | the agent's summary |
 * | `{{error}}` | why it failed (last error, or the summary) |
 * | `{{duration}}` | e.g. `4m 12s` |
 * | `{{cost}}` | e.g. `$0.42`, or `n/a` |
 * | `{{tokens}}` | input/output tokens, e.g. `12,000 in / 3,400 out`, or `n/a` |
 */
export const COMMENT_TEMPLATE_NAMES = ['queued', 'started', 'succeeded', 'failed', 'timed_out', 'cancelled', 'dead'] as const;

export type CommentTemplateName = (typeof COMMENT_TEMPLATE_NAMES)[number];
export type CommentTemplates = Readonly<Record<CommentTemplateName, string>>;

/** A final comment is always posted, so these cannot be switched off with an empty text. */
export const FINAL_TEMPLATE_NAMES: readonly CommentTemplateName[] = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];

export const COMMENT_PLACEHOLDERS = [
  'stage',
  'runId',
  'key',
  'status',
  'owner',
  'repo',
  'number',
  'workspace',
  'trigger',
  'attempts',
  'maxAttempts',
  'summary',
  'error',
  'duration',
  'cost',
  'tokens',
] as const;

export type CommentPlaceholder = (typeof COMMENT_PLACEHOLDERS)[number];

export const DEFAULT_COMMENT_TEMPLATES: CommentTemplates = Object.freeze({
  queued: '⏳ **{{stage}}** is queued (run {{runId}}).',
  started: '🚀 **{{stage}}** started in workspace `{{workspace}}` (run {{runId}}).',
  succeeded: '✅ **{{stage}}** finished in {{duration}} · cost {{cost}} · run {{runId}}\n\n{{summary}}',
  failed: '❌ **{{stage}}** failed after {{duration}} · run {{runId}}\n\n{{error}}',
  timed_out: '⌛ **{{stage}}** timed out after {{duration}} · run {{runId}}\n\n{{error}}',
  cancelled: '🛑 **{{stage}}** was cancelled · run {{runId}}\n\n{{error}}',
  dead: '💀 **{{stage}}** could not start after {{attempts}} attempts · run {{runId}}\n\n{{error}}',
});

const PLACEHOLDER = /\{\{\s*([A-Za-z_]+)\s*\}\}/g;

/**
 * Validates the `comments:` section of baton.yaml. Every problem names its key; on problems the
 * defaults stand in for the bad entries so the caller can decide whether to fail the start.
 * An empty text switches a non-final comment (`queued`, `started`) off.
 */
export function parseCommentTemplates(fileSection: unknown): { templates: CommentTemplates; problems: string[] } {
  const problems: string[] = [];
  const templates: Record<CommentTemplateName, string> = { ...DEFAULT_COMMENT_TEMPLATES };
  if (fileSection === undefined || fileSection === null) return { templates: Object.freeze(templates), problems };
  if (typeof fileSection !== 'object' || Array.isArray(fileSection)) {
    problems.push(
      `baton.yaml: comments must be a mapping of template name to text (${COMMENT_TEMPLATE_NAMES.join(', ')}), got ${show(fileSection)}`,
    );
    return { templates: Object.freeze(templates), problems };
  }
  for (const [key, value] of Object.entries(fileSection as Record<string, unknown>)) {
    if (!(COMMENT_TEMPLATE_NAMES as readonly string[]).includes(key)) {
      problems.push(`comments.${key} is not a known comment template (known: ${COMMENT_TEMPLATE_NAMES.join(', ')})`);
      continue;
    }
    const name = key as CommentTemplateName;
    if (typeof value !== 'string') {
      problems.push(`comments.${key} must be a string (Markdown with {{placeholders}}), got ${show(value)}`);
      continue;
    }
    if (value.trim() === '' && FINAL_TEMPLATE_NAMES.includes(name)) {
      problems.push(`comments.${key} must not be empty: baton always posts a final comment`);
      continue;
    }
    const unknown = [...value.matchAll(PLACEHOLDER)]
      .map((m) => m[1]!)
      .filter((p) => !(COMMENT_PLACEHOLDERS as readonly string[]).includes(p));
    if (unknown.length > 0) {
      problems.push(
        `comments.${key} uses unknown placeholder ${[...new Set(unknown)].map((p) => `{{${p}}}`).join(', ')} (known: ${COMMENT_PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')})`,
      );
      continue;
    }
    templates[name] = value;
  }
  return { templates: Object.freeze(templates), problems };
}

/** Fills placeholders; leaves no run of blank lines behind where a value was empty. */
export function renderCommentTemplate(template: string, values: Readonly<Record<CommentPlaceholder, string>>): string {
  return template
    .replace(PLACEHOLDER, (whole, name: string) => (name in values ? values[name as CommentPlaceholder] : whole))
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
