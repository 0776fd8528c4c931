import type { Config } from './config-types.js';
import { HttpError } from '../web-kit/index.js';
import { isAllowed, seenInSignedDelivery } from '../ingress/index.js';
import type { Logger } from '../log/index.js';
import { manualRequest, type ManualRun } from '../pipeline/index.js';
import { findDeclaredRepository } from '../repositories/index.js';
import { forgeRepository, type EnqueueResult, type RunEngine } from '../runs/index.js';
import type { Store } from '../store/index.js';

/** Queues a manual run; the route has checked the body's shape, this checks what it means. */
export type SubmitRun = (run: Omit<ManualRun, 'declared'>, by: { tokenName: string }) => Promise<EnqueueResult>;

/**
 * `POST /api/runs` behind the route: the stage must exist, the repository must be one baton can
 * clone (declared in baton.yaml, or on the forge at GITEA_URL, GITHUB_URL or GITLAB_URL and
 * allowed by `webhooks.allow`, as a webhook would have to be) and one baton knows: declared,
 * connected (Gitea: its own webhook secret in `webhooks.repositories`, or read by catch-up), or
 * seen in a signed delivery of its forge. An
 * `operate` token must not be able to point the bot's rights at any repository the bot can see.
 * Where it is cloned from is decided when the workspace is made, from the configuration alone
 * (`buildWorkspaceSpec`).
 */
export function createRunSubmission(
  config: Pick<Config, 'pipeline' | 'repositories' | 'gitea' | 'github' | 'gitlab' | 'webhooks' | 'catchup'>,
  engine: Pick<RunEngine, 'enqueue'>,
  logger: Logger,
  store: Pick<Store, 'db'>,
): SubmitRun {
  const connected = (owner: string, repo: string) => {
    const full = `${owner}/${repo}`.toLowerCase();
    return (
      config.webhooks.repositories[full] !== undefined ||
      config.catchup.repositories.some((r) => `${r.owner}/${r.repo}`.toLowerCase() === full)
    );
  };
  return async (run, by) => {
    const name = forgeRepository(run.forge, run.owner, run.repo);
    // Repositories declared in baton.yaml are not on a forge: a GitHub or GitLab name never is one.
    const declared = !run.forge && findDeclaredRepository(config.repositories, run.owner, run.repo) !== undefined;
    if (!declared) {
      const url = run.forge ? config[run.forge].url : config.gitea.url;
      if (!url) {
        const missing = run.forge
          ? `is on ${run.forge}, but ${run.forge === 'github' ? 'GITHUB_URL' : 'GITLAB_URL'} is not set`
          : 'is not declared in baton.yaml (repositories:) and GITEA_URL is not set: baton has nowhere to clone it from';
        throw new HttpError(400, 'bad_request', `repository ${name} ${missing}`);
      }
      if (!isAllowed(config.webhooks.allow, run.owner, run.repo)) {
        throw new HttpError(403, 'forbidden', `repository ${name} is not in webhooks.allow`);
      }
      // Gitea's repositories are also known from baton.yaml; the others from their signed deliveries only.
      const known =
        (!run.forge && connected(run.owner, run.repo)) || (await seenInSignedDelivery(store.db, run.owner, run.repo, run.forge));
      if (!known) {
        const ways = run.forge
          ? ''
          : 'declare it in baton.yaml (repositories:), give it a webhook secret (webhooks.repositories) or list it for catch-up (catchup.repositories), or ';
        throw new HttpError(
          403,
          'forbidden',
          `repository ${name} is not one baton knows: ${ways}connect it (baton connect ${name}) so that a signed delivery from its webhook reaches baton`,
        );
      }
    }
    const request = manualRequest(config.pipeline, { ...run, declared });
    if ('unknownStage' in request) {
      throw new HttpError(
        400,
        'bad_request',
        `stage "${run.stage.slice(0, 64)}" does not exist (stages: ${request.unknownStage.join(', ')})`,
      );
    }
    const result = await engine.enqueue(request);
    logger.info(
      { runId: result.run.id, stage: run.stage, repository: name, number: run.number, outcome: result.outcome, token: by.tokenName },
      'run submitted through the API',
    );
    return result;
  };
}
