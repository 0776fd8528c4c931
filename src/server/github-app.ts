import type { GitHubAppAuth } from '../forge/index.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Logger } from '../log/index.js';

/** The first retry of `GET /app` after a failure, doubling up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 2_000;
const MAX_RETRY_MS = 5 * 60_000;

/**
 * The GitHub App's bot login (`<slug>[bot]`) among the pipeline's bot users, so that the App's
 * own comments, labels and pushes never start a stage, as a bot user's never do. GitHub names the
 * slug only through `GET /app`: it is asked at start, and again with a growing wait while GitHub
 * does not answer; until then GitHub deliveries wait in the inbox (`waitFor`), none is lost.
 */
export function createGitHubAppBot(auth: GitHubAppAuth, pipeline: Pipeline, logger: Pick<Logger, 'info' | 'warn'>) {
  const own: Pipeline = { ...pipeline, botUsers: [...pipeline.botUsers] };
  let known = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const learn = async (retryMs: number): Promise<void> => {
    try {
      const { login } = await auth.identity();
      if (!own.botUsers.includes(login.toLowerCase())) own.botUsers.push(login.toLowerCase());
      known = true;
      logger.info({ login }, 'the GitHub App acts as its bot account');
    } catch (err) {
      if (stopped) return;
      logger.warn(
        { err: err instanceof Error ? err.message : String(err), retryInMs: retryMs },
        'cannot ask GitHub for the App (GET /app): GitHub deliveries wait until it answers',
      );
      timer = setTimeout(() => void learn(Math.min(retryMs * 2, MAX_RETRY_MS)), retryMs);
      timer.unref();
    }
  };
  return {
    /** The pipeline, with the App's bot among its bot users once it is known. */
    pipeline: own,
    waitFor: (forge: string | undefined): string | null =>
      forge === 'github' && !known ? "the GitHub App's bot login is not known yet (GET /app has not answered)" : null,
    start: () => {
      void learn(FIRST_RETRY_MS);
    },
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
