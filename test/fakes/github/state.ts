/** The fake GitHub's data, as GitHub keeps it (see SOURCES.md). */

export type GitHubPermission = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';

export interface UserRecord {
  id: number;
  login: string;
  name: string;
  siteAdmin: boolean;
  type: 'User' | 'Bot';
}

export interface LabelRecord {
  id: number;
  name: string;
  color: string;
  description: string;
}

export interface TimelineRecord {
  id: number;
  event: string;
  actor: string;
  label?: string;
  createdAt: string;
}

export interface CommentRecord {
  id: number;
  issue: number;
  author: string;
  body: string;
  createdAt: string;
  updatedAt: string;
  reactions?: { id: number; user: string; content: string }[];
}

export interface ReviewRecord {
  id: number;
  author: string;
  state: 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED' | 'PENDING';
  body: string;
  commitId: string;
  submittedAt: string;
}

export interface IssueRecord {
  id: number;
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  author: string;
  labels: number[];
  createdAt: string;
  updatedAt: string;
  timeline: TimelineRecord[];
  /** Set for a pull request (GitHub numbers issues and pull requests in one sequence). */
  pull?: { head: string; base: string; sha: string; merged: boolean; draft: boolean; reviews: ReviewRecord[] };
}

export interface HookRecord {
  id: number;
  url: string;
  contentType: string;
  secret: string;
  events: string[];
  active: boolean;
}

export interface RepoRecord {
  id: number;
  owner: string;
  name: string;
  private: boolean;
  archived: boolean;
  defaultBranch: string;
  labels: LabelRecord[];
  issues: IssueRecord[];
  comments: CommentRecord[];
  hooks: HookRecord[];
  /** Lower-cased login → permission; the owner is admin. */
  collaborators: Map<string, GitHubPermission>;
}

/** A GitHub App (apps.ts): its bot is the user `<slug>[bot]`. */
export interface AppRecord {
  id: number;
  slug: string;
  owner: string;
  /** PEM of the App's private key, as GitHub hands it out once (for the test to give baton). */
  privateKey: string;
  publicKey: import('node:crypto').KeyObject;
  /** The events the App subscribes to (its settings page). */
  events: string[];
  /** The App's one webhook (`GET/PATCH /app/hook/config`). */
  hook: { url: string; contentType: string; secret: string; insecureSsl: string };
  installations: InstallationRecord[];
}

export interface InstallationRecord {
  id: number;
  /** The user or organisation the App is installed on. */
  account: string;
  /** Lower-cased names of the account's repositories the installation may reach. */
  repos: Set<string>;
  permissions: Record<string, 'read' | 'write'>;
}

/** An installation access token: the repositories (`owner/name`, lower case) it reaches and when it expires. */
export interface InstallationTokenRecord {
  installation: number;
  repos: Set<string>;
  repositoriesAsked: string[] | undefined;
  expiresAt: number;
}

export class FakeGitHubState {
  private nextId = 1000;
  readonly users = new Map<string, UserRecord>();
  readonly tokens = new Map<string, string>();
  readonly repos = new Map<string, RepoRecord>();
  readonly apps = new Map<number, AppRecord>();
  readonly installationTokens = new Map<string, InstallationTokenRecord>();

  constructor(readonly now: () => Date = () => new Date()) {}

  id(): number {
    return this.nextId++;
  }

  /** GitHub's timestamps: whole seconds, `Z`. */
  timestamp(): string {
    return this.now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z');
  }

  user(login: string): UserRecord | undefined {
    return this.users.get(login.toLowerCase());
  }

  repo(owner: string, name: string): RepoRecord | undefined {
    return this.repos.get(`${owner}/${name}`.toLowerCase());
  }

  permissionOf(repo: RepoRecord, login: string): GitHubPermission {
    if (login.toLowerCase() === repo.owner.toLowerCase()) return 'admin';
    const granted = repo.collaborators.get(login.toLowerCase());
    if (granted) return granted;
    // Anyone can read a public repository.
    return repo.private ? 'none' : 'read';
  }
}

const RANK: GitHubPermission[] = ['none', 'read', 'triage', 'write', 'maintain', 'admin'];

export function atLeast(have: GitHubPermission, wanted: GitHubPermission): boolean {
  return RANK.indexOf(have) >= RANK.indexOf(wanted);
}
