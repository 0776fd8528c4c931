export { createGitHubClient, githubApiUrl, type GitHubClientOptions } from './client.js';
export { createGitHubAppAuth, gitHubAppJwt, type GitHubAppAuth, type GitHubAppIdentity } from './app-auth.js';
export { createGitHubAppClient } from './app-client.js';
