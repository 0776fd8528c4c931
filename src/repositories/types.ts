/**
 * A repository the operator declared in baton.yaml because it is not on the forge. Where it is
 * cloned from comes from here only, never from a webhook or an API call.
 */
export interface DeclaredRepository {
  owner: string;
  repo: string;
  /** A local git repository (absolute) or a git URL. */
  source: { kind: 'path'; path: string } | { kind: 'url'; url: string };
}

/** The declared repositories, by lower-cased `owner/repo` (forge names are case-insensitive). */
export type DeclaredRepositories = Readonly<Record<string, DeclaredRepository>>;
