import { Problems, show, type Config } from '../../config/index.js';
import type { Workspace } from '../types.js';
import { createCoderProvider, type CoderProvider, type CoderProviderOptions } from './provider.js';

/**
 * The Coder provider from the resolved config: `CODER_URL`, `CODER_TOKEN`, `CODER_TEMPLATE_ID`,
 * `CLAUDE_OAUTH_TOKEN`, and from baton.yaml's `coder:` section the optional
 * `templateVersionId` (pins a version instead of the template's active one), `presetId`, `user`,
 * `parameters` (extra rich parameters, string values) and `staleAfterMinutes`.
 * Throws ConfigError naming each bad key.
 */
export function createCoderProviderFromConfig(
  config: Config,
  deps: { isOwnedByLiveRun: (name: string, workspace: Workspace) => Promise<boolean> } & Pick<CoderProviderOptions, 'fetch' | 'clock'>,
): CoderProvider {
  const problems = new Problems();
  const raw = config.file.coder;
  const section = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  problems.required('CODER_URL', config.coder.url, 'when WORKSPACE_PROVIDER=coder (e.g. https://coder.example.com)');
  problems.required('CODER_TOKEN', config.coder.token, 'when WORKSPACE_PROVIDER=coder (a Coder session token)');
  const templateVersionId = problems.string('coder.templateVersionId', section.templateVersionId);
  const presetId = problems.string('coder.presetId', section.presetId);
  const user = problems.string('coder.user', section.user);
  const staleMinutes = problems.number('coder.staleAfterMinutes', section.staleAfterMinutes, 30, 1);
  const extraParameters: Record<string, string> = {};
  if (section.parameters !== undefined) {
    if (!section.parameters || typeof section.parameters !== 'object' || Array.isArray(section.parameters)) {
      problems.add(`coder.parameters must be a mapping of parameter name to value, got ${show(section.parameters)}`);
    } else {
      for (const [name, value] of Object.entries(section.parameters)) {
        if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') extraParameters[name] = String(value);
        else problems.add(`coder.parameters.${name} must be a string, number or boolean, got ${show(value)}`);
      }
    }
  }
  if (!templateVersionId)
    problems.required('CODER_TEMPLATE_ID', config.coder.templateId, 'when WORKSPACE_PROVIDER=coder (the template UUID)');
  problems.throwIfAny();
  return createCoderProvider({
    url: config.coder.url as string,
    token: config.coder.token as string,
    templateId: config.coder.templateId,
    ...(templateVersionId ? { templateVersionId } : {}),
    ...(presetId ? { presetId } : {}),
    ...(user ? { user } : {}),
    claudeOauthToken: config.claude.oauthToken,
    extraParameters,
    staleAfterMs: staleMinutes * 60_000,
    isOwnedByLiveRun: deps.isOwnedByLiveRun,
    fetch: deps.fetch,
    clock: deps.clock,
  });
}
