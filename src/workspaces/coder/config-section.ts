import { httpUrl, leaf, invalid, mapping, number, record, secret, section, text, type ResolveContext } from '../../config-schema/index.js';

export interface CoderSettings {
  url?: string;
  token?: string;
  /** Template of baton's workspaces (also how baton recognises its own). */
  templateId?: string;
  /** Creates from this pinned version instead of the template's active one. */
  templateVersionId?: string;
  presetId?: string;
  /** Whose workspaces: username, user id or `me`. */
  user?: string;
  /** Extra rich parameters sent with every workspace. */
  parameters: Record<string, string>;
  staleAfterMs: number;
}

/**
 * `coder:` in baton.yaml (`WORKSPACE_PROVIDER=coder`). The template is `templateId`
 * (`CODER_TEMPLATE_ID`), or a pinned `templateVersionId`, or both.
 */
export const coderSection = section(
  mapping({
    url: httpUrl({ env: 'CODER_URL', doc: 'Coder deployment URL' }),
    token: secret({ env: 'CODER_TOKEN', doc: 'Coder session token' }),
    templateId: text({ env: 'CODER_TEMPLATE_ID', doc: 'template of the workspaces (also how baton recognises its own)' }),
    templateVersionId: text({ doc: 'create from this pinned template version instead of the active one' }),
    presetId: text({ doc: 'template version preset (template_version_preset_id)' }),
    user: text({ doc: 'whose workspaces: username, user id or me (the token’s user); default me' }),
    parameters: record(
      leaf<string>({
        doc: 'a rich parameter value',
        parse: (raw) =>
          typeof raw === 'string' || typeof raw === 'number' || typeof raw === 'boolean'
            ? String(raw)
            : invalid('must be a string, number or boolean'),
      }),
      { doc: 'extra rich parameters, name: value, sent to every workspace' },
    ),
    staleAfterMinutes: number({
      min: 1,
      default: 30,
      doc: 'a running workspace holding a run’s name, this old and owned by no live run, is deleted and recreated',
    }),
  }),
  (v, ctx: ResolveContext<{ workspaceProvider: string }>): CoderSettings => {
    if (ctx.deps.workspaceProvider === 'coder') {
      const when = 'when WORKSPACE_PROVIDER=coder';
      if (!v.url) ctx.problem(`${ctx.name('url')} is required ${when} (e.g. https://coder.example.com)`);
      if (!v.token) ctx.problem(`${ctx.name('token')} is required ${when} (a Coder session token)`);
      if (!v.templateId && !v.templateVersionId) {
        ctx.problem(`${ctx.name('templateId')} (or coder.templateVersionId) is required ${when} (the template of baton's workspaces)`);
      }
    }
    const { staleAfterMinutes, ...rest } = v;
    return { ...rest, staleAfterMs: staleAfterMinutes * 60_000 };
  },
);
