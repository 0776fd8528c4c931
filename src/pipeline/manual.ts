import type { RunPayload, TaskRequest } from '../runs/index.js';
import type { Pipeline } from './types.js';

/** A run asked for by a person or a script (`POST /api/runs`, `baton run`) instead of a webhook. */
export interface ManualRun {
  stage: string;
  /** GitHub or GitLab; absent for Gitea and Forgejo. */
  forge?: 'github' | 'gitlab';
  owner: string;
  repo: string;
  /** Issue or pull request number, when the run is about one. */
  number?: number;
  /** What `$ARGUMENTS` in the stage's prompt stands for (the number otherwise). */
  arguments?: string;
  /** The branch the runner works on (`BATON_BRANCH`); the repository's default when it does not exist. */
  ref?: string;
  /** The repository is declared in baton.yaml, not on the forge: no forge token, no status comments. */
  declared?: boolean;
}

/**
 * The TaskRequest for a manual run, shaped like one the rules make for a webhook (the stage's
 * account, build weight, setup tokens and duplicate policy), or the known stage names when the
 * stage does not exist. Pure, like `route`.
 */
export function manualRequest(pipeline: Pipeline, run: ManualRun): TaskRequest | { unknownStage: string[] } {
  const stage = pipeline.stages.find((s) => s.name === run.stage);
  if (!stage) return { unknownStage: pipeline.stages.map((s) => s.name) };
  const payload: RunPayload = {
    account: stage.account,
    accountUser: pipeline.accounts[stage.account],
    build: stage.build,
    ...(stage.setupTokens?.length ? { setupTokens: stage.setupTokens } : {}),
    // No token or user name: the trigger is shown in status comments.
    trigger: 'submitted through the API',
  };
  if (stage.deploys) payload.deployEnv = pipeline.deploy.defaultEnv;
  if (run.arguments !== undefined) payload.arguments = run.arguments;
  if (run.ref !== undefined) payload.ref = run.ref;
  if (run.declared) payload.declared = true;
  const request: TaskRequest = { stage: stage.name, owner: run.owner, repo: run.repo, payload, onDuplicate: stage.onDuplicate };
  if (run.number !== undefined) request.number = run.number;
  // As the ingress makes it: the forge in the key's request and in the payload the run keeps.
  if (run.forge) {
    request.forge = run.forge;
    payload.forge = run.forge;
  }
  return request;
}
