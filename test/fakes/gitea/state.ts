/**
 * In-memory data of the fake Gitea: users, tokens, repositories, issues/PRs (one index sequence
 * per repository, as in Gitea), labels, comments, reviews and collaborators.
 */
export type Permission = 'read' | 'write' | 'admin';

export interface UserRecord {
  id: number;
  login: string;
  fullName: string;
  email: string;
  isAdmin: boolean;
  createdAt: string;
}

export interface RepoRecord {
  id: number;
  owner: string;
  name: string;
  archived: boolean;
  private: boolean;
  defaultBranch: string;
  nextIndex: number;
  collaborators: Map<string, Permission>;
  /** Branch protection rules by name or glob (`release/*`), as `GET …/branches/{b}` reports `protected`. */
  protectedBranches: string[];
}

export interface LabelRecord {
  id: number;
  repoId: number;
  name: string;
  /** Stored as given, so tests can mimic old (`#ee0701`) and new (`ee0701`) Gitea. */
  color: string;
  description: string;
  exclusive: boolean;
}

export interface PullRecord {
  headRef: string;
  headSha: string;
  baseRef: string;
  baseSha: string;
  draft: boolean;
  merged: boolean;
  mergeable: boolean;
}

export interface IssueRecord {
  id: number;
  repoId: number;
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  authorId: number;
  labelIds: number[];
  pull: PullRecord | null;
  createdAt: string;
  updatedAt: string;
}

export interface CommentRecord {
  id: number;
  repoId: number;
  issueNumber: number;
  authorId: number;
  body: string;
  createdAt: string;
  updatedAt: string;
}

export type ReviewState = 'APPROVED' | 'PENDING' | 'COMMENT' | 'REQUEST_CHANGES' | 'REQUEST_REVIEW';

export interface ReviewRecord {
  id: number;
  repoId: number;
  number: number;
  authorId: number;
  state: ReviewState;
  body: string;
  commitId: string;
  submittedAt: string;
}

/**
 * A timeline entry (models/issues/comment.go): Gitea writes one for every label added or removed
 * (`label`, content "1" when added, "" when removed; `createLabelComment`) and for every push to a
 * pull request (`pull_push`, content JSON with the commit ids). Each one bumps the issue's
 * updated_at, as `CreateComment` does.
 */
export interface TimelineRecord {
  id: number;
  repoId: number;
  number: number;
  type: 'label' | 'pull_push';
  authorId: number;
  labelId?: number;
  /** `"1"` for a label added, `""` for one removed; the push's JSON for `pull_push`. */
  content: string;
  createdAt: string;
  updatedAt: string;
}

/**
 * A repository webhook as Gitea stores it: the events as single flags (the `issues` and
 * `pull_request` groups expanded; `issues` and `pull_request` themselves are the bare events),
 * and the secret, which no answer ever shows.
 */
export interface HookRecord {
  id: number;
  repoId: number;
  type: string;
  url: string;
  contentType: 'json' | 'form';
  secret: string;
  events: Set<string>;
  active: boolean;
  branchFilter: string;
  authorizationHeader: string;
  createdAt: string;
  updatedAt: string;
}

export class FakeGiteaState {
  readonly users = new Map<number, UserRecord>();
  /** token → user id. */
  readonly tokens = new Map<string, number>();
  readonly repos = new Map<number, RepoRecord>();
  readonly labels = new Map<number, LabelRecord>();
  readonly issues = new Map<number, IssueRecord>();
  readonly comments = new Map<number, CommentRecord>();
  /** comment id → its reactions, oldest first (one per user and content, as Gitea keeps them). */
  readonly reactions = new Map<number, Array<{ userId: number; content: string; createdAt: string }>>();
  readonly reviews = new Map<number, ReviewRecord>();
  readonly hooks = new Map<number, HookRecord>();
  readonly timeline = new Map<number, TimelineRecord>();
  /** token → its scopes (`read:user`, `write:issue`, `all`, …); a token not listed here may do everything. */
  readonly tokenScopes = new Map<string, Set<string>>();
  private ids = { user: 0, repo: 0, label: 0, issue: 0, comment: 0, review: 0, hook: 0 };

  constructor(private readonly now: () => Date = () => new Date()) {}

  timestamp(): string {
    return this.now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z');
  }

  nextId(kind: keyof FakeGiteaState['ids']): number {
    return ++this.ids[kind];
  }

  userByLogin(login: string): UserRecord | undefined {
    const lower = login.toLowerCase();
    for (const user of this.users.values()) if (user.login.toLowerCase() === lower) return user;
    return undefined;
  }

  repo(owner: string, name: string): RepoRecord | undefined {
    for (const repo of this.repos.values()) {
      if (repo.owner.toLowerCase() === owner.toLowerCase() && repo.name.toLowerCase() === name.toLowerCase()) return repo;
    }
    return undefined;
  }

  issue(repoId: number, number: number): IssueRecord | undefined {
    for (const issue of this.issues.values()) if (issue.repoId === repoId && issue.number === number) return issue;
    return undefined;
  }

  repoLabels(repoId: number): LabelRecord[] {
    return [...this.labels.values()].filter((l) => l.repoId === repoId).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Records a timeline entry and bumps the issue's updated_at, as Gitea's CreateComment does. */
  addTimeline(issue: IssueRecord, entry: Pick<TimelineRecord, 'type' | 'authorId' | 'labelId' | 'content'>): TimelineRecord {
    const now = this.timestamp();
    const record: TimelineRecord = {
      ...entry,
      id: this.nextId('comment'),
      repoId: issue.repoId,
      number: issue.number,
      createdAt: now,
      updatedAt: now,
    };
    this.timeline.set(record.id, record);
    issue.updatedAt = now;
    return record;
  }

  issueTimeline(repoId: number, number: number): TimelineRecord[] {
    return [...this.timeline.values()].filter((t) => t.repoId === repoId && t.number === number).sort((a, b) => a.id - b.id);
  }

  repoHooks(repoId: number): HookRecord[] {
    return [...this.hooks.values()].filter((h) => h.repoId === repoId).sort((a, b) => a.id - b.id);
  }

  issueComments(repoId: number, number: number): CommentRecord[] {
    return [...this.comments.values()].filter((c) => c.repoId === repoId && c.issueNumber === number).sort((a, b) => a.id - b.id);
  }

  /** Gitea's access mode for a user on a repository (site admins and owners are `admin`). */
  permission(user: UserRecord, repo: RepoRecord): Permission | 'none' {
    if (user.isAdmin || user.login.toLowerCase() === repo.owner.toLowerCase()) return 'admin';
    return repo.collaborators.get(user.login.toLowerCase()) ?? (repo.private ? 'none' : 'read');
  }

  /** Gitea ≤1.23 says `owner` for the repository owner; the fake can mimic either. */
  accessModeName(user: UserRecord, repo: RepoRecord, legacyOwner: boolean): string {
    if (legacyOwner && user.login.toLowerCase() === repo.owner.toLowerCase()) return 'owner';
    return this.permission(user, repo);
  }
}
