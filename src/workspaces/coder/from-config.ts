import type { ResolvedOf } from '../../config-schema/index.js';
import type { claudeSection } from '../config-section.js';
import type { coderSection } from './config-section.js';
import type { Workspace } from '../types.js';
import { createCoderProvider, type CoderProvider, type CoderProviderOptions } from './provider.js';

/**
 * The Coder provider from the resolved config (`coder:` and `claude:`); the loader has already
 * checked that the URL, the token and a template are there.
 */
export function createCoderProviderFromConfig(
  config: { coder: ResolvedOf<typeof coderSection>; claude: ResolvedOf<typeof claudeSection> },
  deps: { isOwnedByLiveRun: (name: string, workspace: Workspace) => Promise<boolean> } & Pick<
    CoderProviderOptions,
    'fetch' | 'clock' | 'onWarning'
  >,
): CoderProvider {
  const { coder } = config;
  return createCoderProvider({
    url: coder.url as string,
    token: coder.token as string,
    templateId: coder.templateId,
    ...(coder.templateVersionId ? { templateVersionId: coder.templateVersionId } : {}),
    ...(coder.presetId ? { presetId: coder.presetId } : {}),
    ...(coder.user ? { user: coder.user } : {}),
    claudeOauthToken: config.claude.oauthToken,
    extraParameters: coder.parameters,
    staleAfterMs: coder.staleAfterMs,
    isOwnedByLiveRun: deps.isOwnedByLiveRun,
    onWarning: deps.onWarning,
    fetch: deps.fetch,
    clock: deps.clock,
  });
}
