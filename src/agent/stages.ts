/**
 * The built-in SDLC stages. Heavy stages work on code and get the configured install/build
 * commands before the agent starts; light ones only read and write issues.
 */
export const STAGES = [
  'analyse',
  'architect',
  'develop',
  'review-code',
  'rework-pr',
  'test',
  'devops',
  'fix-bug',
  'release',
  'maintenance',
] as const;

export type StageName = (typeof STAGES)[number];

export const HEAVY_STAGES: readonly string[] = ['develop', 'review-code', 'rework-pr', 'test', 'devops', 'fix-bug'];

export function isHeavyStage(stage: string): boolean {
  return HEAVY_STAGES.includes(stage);
}

export function isBuiltInStage(stage: string): stage is StageName {
  return (STAGES as readonly string[]).includes(stage);
}
