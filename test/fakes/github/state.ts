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

export class FakeGitHubState {
  private nextId = 1000;
  readonly users = new Map<string, UserRecord>();
  readonly tokens = new Map<string, string>();
  readonly repos = new Map<string, RepoRecord>();

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
