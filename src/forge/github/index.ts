export { createGitHubClient, githubApiUrl, type GitHubClientOptions } from './client.js';
