import { defaultStages } from '../pipeline/index.js';
import { STAGE } from '../runner-contract/index.js';

/**
 * The built-in SDLC stages, from the pipeline's default table (one source for names and build
 * kinds). Heavy stages work on code and get the configured install/build commands before the
 * agent starts; light ones only read and write issues. The server tells the runner a stage's
 * build kind (`BATON_STAGE_BUILD`), which wins for custom stages; this table is the fallback.
 */
export const STAGES = Object.values(STAGE);

export type StageName = (typeof STAGE)[keyof typeof STAGE];

export const HEAVY_STAGES: readonly string[] = defaultStages()
  .filter((s) => s.build === 'heavy')
  .map((s) => s.name);

export function isHeavyStage(stage: string): boolean {
  return HEAVY_STAGES.includes(stage);
}

export function isBuiltInStage(stage: string): stage is StageName {
  return (STAGES as readonly string[]).includes(stage);
}
