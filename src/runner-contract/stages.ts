/**
 * Names the server and the runner share about stages. The server tells the runner a stage's build
 * kind and setup tokens (`BATON_STAGE_BUILD`, `BATON_SETUP_TOKENS`); the built-in names are also
 * the prompt file names the runner falls back to when a repository has none of its own.
 */

/** Stage names of the default SDLC pipeline. Also the prompt names: `.claude/commands/<stage>.md`. */
export const STAGE = {
  analyse: 'analyse',
  fixBug: 'fix-bug',
  architect: 'architect',
  develop: 'develop',
  reviewCode: 'review-code',
  reworkPr: 'rework-pr',
  test: 'test',
  devops: 'devops',
  release: 'release',
  maintenance: 'maintenance',
} as const;

/**
 * Tokens a stage may hand to its install and build commands, which run the repository's code:
 * `forge` (the bot's forge token and git credentials), `agent` (`CLAUDE_CODE_OAUTH_TOKEN`).
 */
export const SETUP_TOKENS = ['forge', 'agent'] as const;
export type SetupToken = (typeof SETUP_TOKENS)[number];
