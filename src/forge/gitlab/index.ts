export { createGitLabClient, gitlabApiUrl, type GitLabClientOptions } from './client.js';
