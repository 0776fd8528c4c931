/**
 * Repositories: valid names (`owner/repo`), and the repositories the operator declared in
 * baton.yaml because they are not on the forge (the only source of a non-forge clone URL or path).
 */
export {
  parseRepositoryName,
  isNamePart,
  isBranchName,
  isForgeName,
  FORGE_NAME_RULE,
  REPOSITORY_NAME_RULE,
  BRANCH_NAME_RULE,
  gitLabNamespaceProblem,
  gitLabProjectPathProblem,
  parseGitLabProjectPath,
  parseForgeRepository,
  GITLAB_NAMESPACE_MAX_DEPTH,
  GITLAB_PROJECT_PATH_RULE,
  type RepositoryName,
  type ForgeRepositoryName,
} from './names.js';
export { repositoriesSection, findDeclaredRepository, cloneSourceOf } from './config-section.js';
export type { DeclaredRepository, DeclaredRepositories } from './types.js';
