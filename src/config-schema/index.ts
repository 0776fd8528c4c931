/**
 * The vocabulary of baton.yaml sections. Each module declares its own section with these words
 * (its keys, defaults, environment variables and secrets) and exports it; the composition root
 * (src/server/) lists the sections and `createConfigLoader` composes them into one configuration. This folder depends on nothing of baton's, so a
 * module can declare its section without importing the configuration that imports it.
 */
export {
  bool,
  httpUrl,
  int,
  invalid,
  Invalid,
  leaf,
  list,
  mapping,
  number,
  oneOf,
  orFalse,
  record,
  secret,
  text,
  type Infer,
  type Leaf,
  type ListNode,
  type MappingNode,
  type Node,
  type OrFalseNode,
  type RecordNode,
  type Sensitivity,
  type Shape,
} from './nodes.js';
export { readNode, knownKeys, join, isMapping, whereSecretsGo, type Env, type ReadOptions, type Source } from './read.js';
export {
  section,
  checkSection,
  contextFor,
  type Section,
  type SectionNode,
  type ResolveContext,
  type ResolvedOf,
  type DepsOf,
} from './section.js';
export { ConfigError } from './problems.js';
export { describeSettings, formatSettings } from './describe.js';
export {
  createConfigLoader,
  sensitiveVariables,
  type ConfigLoader,
  type ConfigLoaderOptions,
  type LoadedSettings,
  type LoadReport,
} from './loader.js';
export { show, maskUrlCredentials, maskUrlCredentialsInJson, SECRET_MASK } from './show.js';
