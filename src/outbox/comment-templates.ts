import { checkSection, invalid, leaf, mapping, section } from '../config-schema/index.js';

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
 * | `{{error}}` | why it failed or is held, in general terms (the details, which may name paths, hosts or tokens, stay in the API and dashboard) |
 * | `{{duration}}` | e.g. `4m 12s` |
 * | `{{cost}}` | e.g. `$0.42`, or `n/a` |
 * | `{{tokens}}` | input/output tokens, e.g. `12,000 in / 3,400 out` (`12,000 in + 40,000 cached / 3,400 out` with cache reads), or `n/a` |
 */
export const COMMENT_TEMPLATE_NAMES = ['queued', 'held', 'started', 'succeeded', 'failed', 'timed_out', 'cancelled', 'dead'] as const;

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
  held: '⏸️ **{{stage}}** is on hold · run {{runId}}\n\n{{error}}',
  started: '🚀 **{{stage}}** started in workspace `{{workspace}}` (run {{runId}}).',
  succeeded: '✅ **{{stage}}** finished in {{duration}} · tokens {{tokens}} · cost {{cost}} · run {{runId}}\n\n{{summary}}',
  failed: '❌ **{{stage}}** failed after {{duration}} · run {{runId}}\n\n{{error}} The details are in baton under run {{runId}}.',
  timed_out: '⌛ **{{stage}}** timed out after {{duration}} · run {{runId}}\n\n{{error}} The details are in baton under run {{runId}}.',
  cancelled: '🛑 **{{stage}}** was cancelled · run {{runId}}',
  dead: '💀 **{{stage}}** could not start after {{attempts}} attempts · run {{runId}}\n\n{{error}} The details are in baton under run {{runId}}.',
});

const PLACEHOLDER = /\{\{\s*([A-Za-z_]+)\s*\}\}/g;

const template = (name: CommentTemplateName) =>
  leaf<string, string>({
    default: DEFAULT_COMMENT_TEMPLATES[name],
    doc: FINAL_TEMPLATE_NAMES.includes(name)
      ? `the ${name} comment (Markdown with {{placeholders}})`
      : `the ${name} comment (Markdown with {{placeholders}}); empty turns it off`,
    parse: (raw) => {
      if (typeof raw !== 'string') return invalid('must be a string (Markdown with {{placeholders}})');
      if (raw.trim() === '' && FINAL_TEMPLATE_NAMES.includes(name)) return invalid('must not be empty: baton always posts a final comment');
      const unknown = [...new Set([...raw.matchAll(PLACEHOLDER)].map((m) => m[1]!))].filter(
        (p) => !(COMMENT_PLACEHOLDERS as readonly string[]).includes(p),
      );
      if (unknown.length > 0) {
        return invalid(
          `uses unknown placeholder ${unknown.map((p) => `{{${p}}}`).join(', ')} (known: ${COMMENT_PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')})`,
        );
      }
      return raw;
    },
  });

/** `comments:` in baton.yaml: the status comment texts. */
export const commentsSection = section(
  mapping({
    queued: template('queued'),
    held: template('held'),
    started: template('started'),
    succeeded: template('succeeded'),
    failed: template('failed'),
    timed_out: template('timed_out'),
    cancelled: template('cancelled'),
    dead: template('dead'),
  }),
  (v): CommentTemplates => Object.freeze({ ...v }),
);

/** The templates from a raw `comments:` value on its own (tests); bad entries keep their defaults. */
export function parseCommentTemplates(raw: unknown): { templates: CommentTemplates; problems: string[] } {
  const { value, problems } = checkSection(commentsSection, 'comments', raw, undefined);
  return { templates: value, problems };
}

/** Fills placeholders; leaves no run of blank lines behind where a value was empty. */
export function renderCommentTemplate(template: string, values: Readonly<Record<CommentPlaceholder, string>>): string {
  return template
    .replace(PLACEHOLDER, (whole, name: string) => (name in values ? values[name as CommentPlaceholder] : whole))
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
