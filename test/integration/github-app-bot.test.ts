import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/background/index.js';
import { createGitHubAppAuth } from '../../src/forge/index.js';
import { defaultPipeline } from '../../src/pipeline/index.js';
import { createGitHubAppBot } from '../../src/server/github-app.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import { until } from '../helpers/until.js';

/** The App's bot login joins the pipeline's bots once GitHub names it; GitHub deliveries wait until then. */
describe("the GitHub App's bot login", () => {
  let github: FakeGitHub | undefined;
  afterEach(async () => {
    await github?.close();
  });

  it('holds GitHub deliveries while GET /app fails, then counts <slug>[bot] as a bot', async () => {
    github = await createFakeGitHub();
    const app = github.addApp('baton-ci');
    github.failNext('/api/v3/app', 503);
    const auth = createGitHubAppAuth({ apiUrl: github.apiUrl, appId: String(app.id), privateKey: app.privateKey });
    const pipeline = defaultPipeline({ dev: { username: 'claude-dev' }, review: { username: 'claude-review' } });
    const bot = createGitHubAppBot(auth, pipeline, { ...silentLogger, info: () => {}, warn: () => {} });
    bot.start();
    try {
      expect(bot.waitFor('github')).toMatch(/GitHub App's bot login is not known yet/);
      // Gitea's and GitLab's deliveries never wait for GitHub.
      expect(bot.waitFor(undefined)).toBeNull();
      expect(bot.waitFor('gitlab')).toBeNull();
      await until(() => bot.waitFor('github') === null, 'the retried GET /app to answer');
      expect(bot.pipeline.botUsers).toContain('baton-ci[bot]');
      expect(github.requests.filter((r) => r === 'GET /api/v3/app')).toHaveLength(2);
      // The configuration's own pipeline is left as it was.
      expect(pipeline.botUsers).not.toContain('baton-ci[bot]');
    } finally {
      await bot.stop();
    }
  });
});
