export { createGitHubIngress, GITHUB_WEBHOOK_PATH, type GitHubIngressDeps } from './app.js';
export { classifyGitHub, gitHubForgeEvent, gitHubNumberOf, readGitHubRepository, type GitHubClassified } from './normalize.js';
