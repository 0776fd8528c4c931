import { CommandFileError } from './errors.js';

/**
 * How a stage prompt talks to the run's forge, said once per forge. A prompt names a step
 * (`{{forge.comment $ARGUMENTS /tmp/analysis.md}}`) and the run gets the command for its forge:
 * Gitea's and Forgejo's `$GITEA_URL/api/v1/repos/…`, GitHub's `$GITHUB_API_URL/repos/…`,
 * GitLab's `$CI_API_V4_URL/projects/<URL-encoded path>/…`, each with the token variable its
 * tools read (src/agent/forge-env.ts). Every command is one the forge gateway lets a run make
 * (src/forge-gateway/{gitea,github,gitlab}.ts): REST through `curl`, never GraphQL, which the
 * gateway refuses on every forge (so `gh`, which does most of its work in GraphQL, cannot work
 * in a run; `glab` is untested).
 *
 * The syntax: `{{forge}}` (the paragraph naming the API, the repository and the token), or
 * `{{forge.<step> <argument>…}}`, arguments separated by spaces, a double-quoted one kept with
 * its quotes (they are shell words, put into the command as written). A step alone on its line
 * keeps the line's indentation on every line of its command. A prompt without `{{forge` is used
 * as it is written, so prompts written for one forge keep working.
 *
 * Sources: Gitea's API (swagger, /api/v1), GitHub's REST API 2022-11-28 ("Issues", "Issue
 * comments", "Labels", "Pulls", "Pull request reviews", "Releases"), GitLab's REST API v4
 * ("Issues API", "Notes API", "Merge requests API", "Merge request approvals API",
 * "Discussions API"), as the gateway's dialects cite them.
 */

/** The forges a prompt is rendered for; Forgejo speaks Gitea's API. */
export const PROMPT_FORGES = ['gitea', 'github', 'gitlab'] as const;
export type PromptForge = (typeof PROMPT_FORGES)[number];

/** The run's forge (`BATON_FORGE`) as a prompt forge: Forgejo and an unset forge are Gitea. */
export function promptForgeOf(forge: string | undefined): PromptForge {
  return forge === 'github' || forge === 'gitlab' ? forge : 'gitea';
}

/** One step: what its arguments are (for messages and docs), and its text on each forge. */
interface Step {
  args: readonly string[];
  summary: string;
  render: Record<PromptForge, (...args: string[]) => string>;
}

/** The pieces every command of a forge shares: how the token goes and where the repository is. */
const AUTH = {
  gitea: '-H "Authorization: token $GITEA_TOKEN"',
  github: '-H "Authorization: Bearer $GH_TOKEN"',
  gitlab: '-H "PRIVATE-TOKEN: $GITLAB_TOKEN"',
} as const;
const REPO = {
  gitea: '$GITEA_URL/api/v1/repos/$GITEA_ORG/$GITEA_REPO',
  github: '$GITHUB_API_URL/repos/$GITHUB_REPOSITORY',
  // GitLab names a project by its URL-encoded path (`acme%2Fapp`): bash's ${var//\//%2F}.
  gitlab: '$CI_API_V4_URL/projects/${CI_PROJECT_PATH//\\//%2F}',
} as const;
const JSON_TYPE = '-H "Content-Type: application/json"';

const get = (forge: PromptForge, rest: string) => `curl -fsS ${AUTH[forge]} "${REPO[forge]}${rest}"`;
/** A write whose JSON body comes on stdin (`node … | <this>`). */
const send = (forge: PromptForge, method: string, rest: string) =>
  `curl -fsS -X ${method} ${AUTH[forge]} ${JSON_TYPE} --data-binary @- \\\n    "${REPO[forge]}${rest}"`;
/** `node -e` printing `{<field>: <file's text>}`: a comment's or a note's body. */
const bodyOf = (field: string, file: string) =>
  `node -e 'process.stdout.write(JSON.stringify({${field}: require("fs").readFileSync(process.argv[1], "utf8")}))' ${file} \\\n  | `;
const STEPS: Record<string, Step> = {
  repository: {
    args: [],
    summary: 'the repository as owner/name',
    render: { gitea: () => '$GITEA_ORG/$GITEA_REPO', github: () => '$GITHUB_REPOSITORY', gitlab: () => '$CI_PROJECT_PATH' },
  },
  issue: {
    args: ['issue'],
    summary: 'read an issue',
    render: {
      gitea: (n) => get('gitea', `/issues/${n}`),
      github: (n) => get('github', `/issues/${n}`),
      gitlab: (n) => get('gitlab', `/issues/${n}`),
    },
  },
  'issue-comments': {
    args: ['issue'],
    summary: "read an issue's comments",
    render: {
      gitea: (n) => get('gitea', `/issues/${n}/comments`),
      github: (n) => get('github', `/issues/${n}/comments?per_page=100`),
      gitlab: (n) => get('gitlab', `/issues/${n}/notes?sort=asc&per_page=100`),
    },
  },
  pull: {
    args: ['pull'],
    summary: 'read a pull (merge) request',
    render: {
      gitea: (n) => get('gitea', `/pulls/${n}`),
      github: (n) => get('github', `/pulls/${n}`),
      gitlab: (n) => get('gitlab', `/merge_requests/${n}`),
    },
  },
  'pull-comments': {
    args: ['pull'],
    summary: "read a pull request's conversation",
    render: {
      gitea: (n) => get('gitea', `/issues/${n}/comments`),
      github: (n) => get('github', `/issues/${n}/comments?per_page=100`),
      gitlab: (n) => get('gitlab', `/merge_requests/${n}/notes?sort=asc&per_page=100`),
    },
  },
  reviews: {
    args: ['pull'],
    summary: "read a pull request's reviews (GitLab: its approvals and discussions)",
    render: {
      gitea: (n) => get('gitea', `/pulls/${n}/reviews`),
      github: (n) => get('github', `/pulls/${n}/reviews`),
      gitlab: (n) =>
        `${get('gitlab', `/merge_requests/${n}/approvals`)}\n${get('gitlab', `/merge_requests/${n}/discussions?per_page=100`)}`,
    },
  },
  'review-comments': {
    args: ['pull', 'review'],
    summary: "read one review's line comments",
    render: {
      gitea: (n, id) => get('gitea', `/pulls/${n}/reviews/${id}/comments`),
      github: (n, id) => get('github', `/pulls/${n}/reviews/${id}/comments`),
      // GitLab keeps line comments as discussions of the merge request, not of a review.
      gitlab: (n) => get('gitlab', `/merge_requests/${n}/discussions?per_page=100`),
    },
  },
  'changes-requested': {
    args: [],
    summary: 'which review asked for changes (prose)',
    render: {
      gitea: () => 'the most recent review with `"state": "REQUEST_CHANGES"`',
      github: () => 'the most recent review with `"state": "CHANGES_REQUESTED"`',
      gitlab: () =>
        "the review account's most recent note and discussions (GitLab has no review objects: changes are asked for in a note, with the reviewer state `requested_changes`)",
    },
  },
  'is-pull': {
    args: ['number'],
    summary: 'how to tell a pull request from an issue (prose)',
    render: {
      gitea: (n) => `The issue object has \`pull_request\` set when \`#${n}\` is a pull request.`,
      github: (n) => `The issue object has \`pull_request\` set when \`#${n}\` is a pull request.`,
      gitlab: (n) =>
        `GitLab numbers merge requests apart from issues: a run started by an approval is on merge request !${n} (read it as a pull request), one started by a label on issue #${n}.`,
    },
  },
  'pull-head': {
    args: [],
    summary: "where a pull request's JSON names its head branch (prose)",
    render: { gitea: () => '`head.ref`', github: () => '`head.ref`', gitlab: () => '`source_branch`' },
  },
  'pull-ref': {
    args: ['pull'],
    summary: "the git ref of a pull request's head, for git fetch",
    render: { gitea: (n) => `pull/${n}/head`, github: (n) => `pull/${n}/head`, gitlab: (n) => `merge-requests/${n}/head` },
  },
  'pull-base': {
    args: ['pull'],
    summary: "print a pull request's base (target) branch",
    render: {
      gitea: (n) =>
        `${get('gitea', `/pulls/${n}`)} | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).base.ref))'`,
      github: (n) =>
        `${get('github', `/pulls/${n}`)} | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).base.ref))'`,
      gitlab: (n) =>
        `${get('gitlab', `/merge_requests/${n}`)} | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_branch))'`,
    },
  },
  'open-pulls': {
    args: [],
    summary: 'list the open pull requests',
    render: {
      gitea: () => get('gitea', '/pulls?state=open&limit=50'),
      github: () => get('github', '/pulls?state=open&per_page=50'),
      gitlab: () => get('gitlab', '/merge_requests?state=opened&per_page=50'),
    },
  },
  'open-issues': {
    args: [],
    summary: 'list the open issues',
    render: {
      gitea: () => get('gitea', '/issues?state=open&type=issues&limit=50'),
      // GitHub lists pull requests among issues: those have `pull_request`.
      github: () => get('github', '/issues?state=open&per_page=50'),
      gitlab: () => get('gitlab', '/issues?state=opened&per_page=50'),
    },
  },
  'find-issue': {
    args: ['url-encoded title words'],
    summary: 'look for open issues by title',
    render: {
      gitea: (q) => get('gitea', `/issues?state=open&type=issues&q=${q}`),
      // GitHub's search API is global, outside the run's repository: list and read the titles.
      github: () => get('github', '/issues?state=open&per_page=100'),
      gitlab: (q) => get('gitlab', `/issues?state=opened&in=title&search=${q}`),
    },
  },
  comment: {
    args: ['issue', 'file'],
    summary: 'post a file as a comment on an issue',
    render: {
      gitea: (n, file) => `${bodyOf('body', file)}${send('gitea', 'POST', `/issues/${n}/comments`)}`,
      github: (n, file) => `${bodyOf('body', file)}${send('github', 'POST', `/issues/${n}/comments`)}`,
      gitlab: (n, file) => `${bodyOf('body', file)}${send('gitlab', 'POST', `/issues/${n}/notes`)}`,
    },
  },
  'pull-comment': {
    args: ['pull', 'file'],
    summary: 'post a file as a comment on a pull request',
    render: {
      gitea: (n, file) => `${bodyOf('body', file)}${send('gitea', 'POST', `/issues/${n}/comments`)}`,
      github: (n, file) => `${bodyOf('body', file)}${send('github', 'POST', `/issues/${n}/comments`)}`,
      gitlab: (n, file) => `${bodyOf('body', file)}${send('gitlab', 'POST', `/merge_requests/${n}/notes`)}`,
    },
  },
  label: {
    args: ['issue', 'label'],
    summary: 'add a label to an issue',
    render: {
      gitea: (n, label) =>
        `curl -fsS -X POST ${AUTH.gitea} ${JSON_TYPE} \\\n  -d '{"labels":["${label}"]}' \\\n  "${REPO.gitea}/issues/${n}/labels"\n` +
        '# Older Gitea versions take label IDs only: look the ID up in GET …/labels?limit=100 and send {"labels":[ID]}.',
      github: (n, label) =>
        `curl -fsS -X POST ${AUTH.github} ${JSON_TYPE} \\\n  -d '{"labels":["${label}"]}' \\\n  "${REPO.github}/issues/${n}/labels"`,
      gitlab: (n, label) =>
        `curl -fsS -X PUT ${AUTH.gitlab} ${JSON_TYPE} \\\n  -d '{"add_labels":"${label}"}' \\\n  "${REPO.gitlab}/issues/${n}"`,
    },
  },
  'create-issue': {
    args: ['title', 'file'],
    summary: 'open an issue with a file as its description',
    render: {
      gitea: (title, file) => `${newIssue('body', title, file)}${send('gitea', 'POST', '/issues')}`,
      github: (title, file) => `${newIssue('body', title, file)}${send('github', 'POST', '/issues')}`,
      gitlab: (title, file) => `${newIssue('description', title, file)}${send('gitlab', 'POST', '/issues')}`,
    },
  },
  'open-pull': {
    args: ['base branch', 'title', 'file'],
    summary: 'open a pull (merge) request from the current branch',
    render: {
      gitea: (base, title, file) => `${newPull('head', 'base', 'body', base, title, file)}${send('gitea', 'POST', '/pulls')}`,
      github: (base, title, file) => `${newPull('head', 'base', 'body', base, title, file)}${send('github', 'POST', '/pulls')}`,
      gitlab: (base, title, file) =>
        `${newPull('source_branch', 'target_branch', 'description', base, title, file)}${send('gitlab', 'POST', '/merge_requests')}`,
    },
  },
  merge: {
    args: ['pull'],
    summary: 'merge a pull request (only stages with the right to merge)',
    render: {
      gitea: (n) => `curl -fsS -X POST ${AUTH.gitea} ${JSON_TYPE} -d '{"Do":"merge"}' "${REPO.gitea}/pulls/${n}/merge"`,
      github: (n) => `curl -fsS -X PUT ${AUTH.github} ${JSON_TYPE} -d '{"merge_method":"merge"}' "${REPO.github}/pulls/${n}/merge"`,
      gitlab: (n) => `curl -fsS -X PUT ${AUTH.gitlab} ${JSON_TYPE} -d '{}' "${REPO.gitlab}/merge_requests/${n}/merge"`,
    },
  },
  review: {
    args: ['pull', 'review file', 'line comments file'],
    summary: 'submit a review: approve or request changes, with line comments [{"path","line","body"}]',
    render: {
      gitea: (n, review, comments) =>
        `EVENT=REQUEST_CHANGES   # or APPROVED\n${reviewBody('{path:c.path,new_position:c.line,body:c.body}', review, comments)}${send('gitea', 'POST', `/pulls/${n}/reviews`)}`,
      github: (n, review, comments) =>
        `EVENT=REQUEST_CHANGES   # or APPROVE\n${reviewBody('{path:c.path,line:c.line,side:"RIGHT",body:c.body}', review, comments)}${send('github', 'POST', `/pulls/${n}/reviews`)}`,
      // GitLab has no review object: the review is a note, the verdict an approval or the review
      // account's reviewer state `requested_changes` (gitLabRequestChanges).
      gitlab: (n, review, comments) =>
        [
          'VERDICT=request-changes   # or approve',
          `node -e 'const fs=require("fs");const lines=JSON.parse(fs.readFileSync(process.argv[2],"utf8")).map(c=>"- \`"+c.path+":"+c.line+"\`: "+c.body);process.stdout.write(JSON.stringify({body:fs.readFileSync(process.argv[1],"utf8")+(lines.length?"\\n\\n"+lines.join("\\n"):"")}))' ${review} ${comments} \\`,
          `  | ${send('gitlab', 'POST', `/merge_requests/${n}/notes`)}`,
          ...verdict(n),
        ].join('\n'),
    },
  },
  'request-changes': {
    args: ['pull', 'file'],
    summary: 'ask for changes on a pull request, with a file as the reason',
    render: {
      gitea: (n, file) =>
        `node -e 'process.stdout.write(JSON.stringify({event:"REQUEST_CHANGES",body:require("fs").readFileSync(process.argv[1],"utf8")}))' ${file} \\\n  | ${send('gitea', 'POST', `/pulls/${n}/reviews`)}`,
      github: (n, file) =>
        `node -e 'process.stdout.write(JSON.stringify({event:"REQUEST_CHANGES",body:require("fs").readFileSync(process.argv[1],"utf8")}))' ${file} \\\n  | ${send('github', 'POST', `/pulls/${n}/reviews`)}`,
      gitlab: (n, file) =>
        [`${bodyOf('body', file)}${send('gitlab', 'POST', `/merge_requests/${n}/notes`)}`, ...gitLabRequestChanges(n)].join('\n'),
    },
  },
  'draft-release': {
    args: ['version', 'notes file'],
    summary: 'make a draft release (GitLab has none: the step says so)',
    render: {
      gitea: (version, file) => `${draft(version, file)}${send('gitea', 'POST', '/releases')}`,
      github: (version, file) => `${draft(version, file)}${send('github', 'POST', '/releases')}`,
      gitlab: () =>
        '# GitLab has no draft releases: one made through the API is published at once and makes its tag,\n' +
        '# so baton makes none. The release notes are in the merge request; a person makes the release after merging.',
    },
  },
};

function newIssue(bodyField: string, title: string, file: string): string {
  return `node -e 'const fs=require("fs");process.stdout.write(JSON.stringify({title:process.argv[1],${bodyField}:fs.readFileSync(process.argv[2],"utf8")}))' ${title} ${file} \\\n  | `;
}

function newPull(head: string, base: string, bodyField: string, baseBranch: string, title: string, file: string): string {
  return (
    'BRANCH=$(git rev-parse --abbrev-ref HEAD)\n' +
    `node -e 'const fs=require("fs");process.stdout.write(JSON.stringify({${head}:process.argv[1],${base}:process.argv[2],title:process.argv[3],${bodyField}:fs.readFileSync(process.argv[4],"utf8")}))' \\\n` +
    `  "$BRANCH" ${baseBranch} ${title} ${file} \\\n  | `
  );
}

function reviewBody(comment: string, review: string, comments: string): string {
  return `node -e 'const fs=require("fs");process.stdout.write(JSON.stringify({event:process.argv[1],body:fs.readFileSync(process.argv[2],"utf8"),comments:JSON.parse(fs.readFileSync(process.argv[3],"utf8")).map(c=>(${comment}))}))' "$EVENT" ${review} ${comments} \\\n  | `;
}

function verdict(n: string): string[] {
  return [
    'if [ "$VERDICT" = approve ]; then',
    `  curl -fsS -X POST ${AUTH.gitlab} "${REPO.gitlab}/merge_requests/${n}/approve"`,
    'else',
    ...gitLabRequestChanges(n).map((line) => `  ${line.replaceAll('\n', '\n  ')}`),
    'fi',
  ];
}

/**
 * GitLab's "Request changes" as the caller: the reviewer state `requested_changes`, set by
 * publishing the caller's pending review (`POST …/draft_notes/bulk_publish` with `reviewer_state`
 * requested_changes | reviewed; gitlab-org/gitlab lib/api/draft_notes.rb). GitLab answers 204
 * whatever came of it (the endpoint drops the result of app/services/merge_requests/
 * update_reviewer_state_service.rb): the state is set when the account is a reviewer of the merge
 * request (or GitLab makes it one on submission), its approval is taken back, and the Merge
 * Request Hook `update` with `changes.reviewers` starts rework. A GitLab without reviewer states
 * ignores the field: there, taking back an approval is the verdict (a 404: none to take back, as
 * after `requested_changes`, which took it back already).
 */
function gitLabRequestChanges(n: string): string[] {
  return [
    `curl -fsS -X POST ${AUTH.gitlab} ${JSON_TYPE} -d '{"reviewer_state":"requested_changes"}' \\\n  "${REPO.gitlab}/merge_requests/${n}/draft_notes/bulk_publish"`,
    '# A GitLab without reviewer states asks for changes by taking back an approval (a 404: none to take back).',
    `curl -sS -X POST ${AUTH.gitlab} "${REPO.gitlab}/merge_requests/${n}/unapprove"`,
  ];
}

function draft(version: string, file: string): string {
  return `node -e 'const fs=require("fs");process.stdout.write(JSON.stringify({tag_name:"v"+process.argv[1],target_commitish:"main",name:"v"+process.argv[1],body:fs.readFileSync(process.argv[2],"utf8"),draft:true}))' ${version} ${file} \\\n  | `;
}

/** `{{forge}}`: where the API is, which repository, which token, and what the forge does differently. */
const INTRO: Record<PromptForge, string> = {
  gitea: 'Forge API: `$GITEA_URL/api/v1`, repository `$GITEA_ORG/$GITEA_REPO`, token in `$GITEA_TOKEN`',
  github:
    'Forge: GitHub, REST API at `$GITHUB_API_URL` (use `curl`: GraphQL is refused, so the `gh` CLI\n' +
    'does not work here), repository `$GITHUB_REPOSITORY`, token in `$GH_TOKEN`',
  gitlab:
    'Forge: GitLab, REST API at `$CI_API_V4_URL` (use `curl`: GraphQL is refused), project\n' +
    '`$CI_PROJECT_PATH` (URL-encoded in API paths: `${CI_PROJECT_PATH//\\//%2F}`; merge requests `!N`\n' +
    'are numbered apart from issues `#N`), token in `$GITLAB_TOKEN`',
};

/** The steps a prompt may name, with their arguments, for docs and messages. */
export function forgeStepNames(): { name: string; args: readonly string[]; summary: string }[] {
  return Object.entries(STEPS).map(([name, step]) => ({ name, args: step.args, summary: step.summary }));
}

/** An argument: a double-quoted shell word, a `<placeholder with spaces>`, or a bare word. */
const ARGUMENT = /"[^"\n]*"|<[^<>\n]*>|[^\s"<}]+/g;
const PLACEHOLDER = new RegExp(`\\{\\{forge(?:\\.([a-z][a-z-]*))?((?:[ \\t]+(?:${ARGUMENT.source}))*)[ \\t]*\\}\\}`, 'g');

/**
 * The prompt with every `{{forge…}}` placeholder replaced by the text for `forge`. `label` names
 * the file in errors: an unknown step or a wrong number of arguments is the prompt's mistake,
 * told rather than passed on to the agent as a broken command.
 */
export function fillForgeSteps(text: string, forge: PromptForge, label: string): string {
  return text.replace(PLACEHOLDER, (match: string, name: string | undefined, rawArgs: string, offset: number) => {
    if (name === undefined) {
      if (rawArgs.trim() !== '') throw new CommandFileError(`${label}: {{forge}} takes no arguments, got ${match}`);
      return INTRO[forge];
    }
    const step = STEPS[name];
    if (!step)
      throw new CommandFileError(
        `${label}: ${match} names no forge step; the steps are ${Object.keys(STEPS).join(', ')} (and {{forge}} itself)`,
      );
    const args = rawArgs.match(ARGUMENT) ?? [];
    if (args.length !== step.args.length)
      throw new CommandFileError(
        `${label}: {{forge.${name}}} takes ${step.args.length} argument(s)${step.args.length ? ` (${step.args.join(', ')})` : ''}, got ${args.length} in ${match}`,
      );
    const rendered = step.render[forge](...args);
    // Alone on its line (after indentation), a step's further lines keep that indentation.
    const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
    const before = text.slice(lineStart, offset);
    return /^[ \t]*$/.test(before) ? rendered.replaceAll('\n', `\n${before}`) : rendered;
  });
}
