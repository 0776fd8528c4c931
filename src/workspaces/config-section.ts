import { mapping, secret, section } from '../config-schema/index.js';

/** `claude:` in baton.yaml: what workspaces need to run Claude Code. */
export const claudeSection = section(
  mapping({
    oauthToken: secret({
      env: 'CLAUDE_OAUTH_TOKEN',
      doc: 'Claude Code OAuth token handed to workspaces as CLAUDE_CODE_OAUTH_TOKEN (claude setup-token)',
    }),
  }),
);
