export { createGitLabIngress, GITLAB_WEBHOOK_PATH, type GitLabIngressDeps } from './app.js';
export { classifyGitLab, gitLabForgeEvent, gitLabNumberOf, readGitLabRepository, type GitLabClassified } from './normalize.js';
