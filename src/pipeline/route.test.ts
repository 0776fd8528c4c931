import { describe, expect, it } from 'vitest';
import type { TaskRequest } from '../runs/index.js';
import { defaultPipeline } from './stages.js';
import { maintenanceRequests } from './maintenance.js';
import { parsePipelineConfig } from './config-section.js';
import { route } from './route.js';
import type { ForgeEvent, RouteResult } from './types.js';

const bots = { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } };
const pipeline = defaultPipeline(bots);

function issue(overrides: Partial<ForgeEvent> = {}): ForgeEvent {
  return {
    kind: 'issue_opened',
    action: 'opened',
    event: 'issues',
    forge: 'gitea',
    owner: 'acme',
    repo: 'app',
    number: 7,
    sender: 'alice',
    labels: [],
    state: 'open',
    isPull: false,
    merged: false,
    ...overrides,
  };
}

function pr(overrides: Partial<ForgeEvent> = {}): ForgeEvent {
  return issue({ kind: 'pr_opened', event: 'pull_request', isPull: true, ...overrides });
}

function stages(result: RouteResult): string[] {
  if (!Array.isArray(result)) throw new Error(`expected requests, got ignored: ${result.ignored}`);
  return result.map((r) => r.stage);
}

function only(result: RouteResult): TaskRequest {
  if (!Array.isArray(result) || result.length !== 1) throw new Error(`expected one request, got ${JSON.stringify(result)}`);
  return result[0]!;
}

const fresh = { previousLabels: null };

describe('route: default SDLC table', () => {
  it('starts analyse for a new issue without labels, as the dev bot with a light build', () => {
    const request = only(route(issue(), pipeline, fresh));
    expect(request).toMatchObject({ stage: 'analyse', owner: 'acme', repo: 'app', number: 7, onDuplicate: 'followup' });
    expect(request.payload).toMatchObject({
      account: 'dev',
      accountUser: 'claude-dev',
      build: 'light',
    });
    // Where to clone from is the configuration's to say, never the event's.
    expect(request.payload).not.toHaveProperty('cloneUrl');
    expect(request.payload?.trigger).toBe('issue #7 opened by alice');
  });

  it('carries the setup tokens a stage grants in the payload, and none by default', () => {
    const granted = parsePipelineConfig({ stages: { 'fix-bug': { setupTokens: ['forge'] } } }, bots).pipeline;
    expect(only(route(issue({ labels: ['bug'] }), granted, fresh)).payload?.setupTokens).toEqual(['forge']);
    expect(only(route(issue({ labels: ['bug'] }), pipeline, fresh)).payload).not.toHaveProperty('setupTokens');
  });

  it('starts fix-bug, not analyse, for a new issue labelled bug', () => {
    const request = only(route(issue({ labels: ['bug'] }), pipeline, fresh));
    expect(request.stage).toBe('fix-bug');
    expect(request.payload).toMatchObject({ account: 'dev', build: 'heavy' });
  });

  it('starts release for an issue opened with the release label, once', () => {
    expect(stages(route(issue({ labels: ['release'] }), pipeline, fresh))).toEqual(['release']);
  });

  it('starts release when the release label is newly added', () => {
    const event = issue({ kind: 'issue_labels', action: 'label_updated', labels: ['release'] });
    expect(stages(route(event, pipeline, { previousLabels: [] }))).toEqual(['release']);
  });

  it.each([
    ['ready-for-architecture', 'architect', 'light'],
    ['ready-for-development', 'develop', 'heavy'],
    ['ready-for-testing', 'test', 'heavy'],
    ['ready-for-deployment', 'devops', 'heavy'],
  ])('starts a stage when %s is newly present', (label, stage, build) => {
    const event = issue({ kind: 'issue_labels', action: 'label_updated', labels: ['enhancement', label] });
    const request = only(route(event, pipeline, { previousLabels: ['enhancement'] }));
    expect(request.stage).toBe(stage);
    expect(request.payload?.build).toBe(build);
    expect(request.payload?.trigger).toBe(`label "${label}" added by alice`);
  });

  it('does not restart a stage when a label event arrives but the label was already there', () => {
    const event = issue({ kind: 'issue_labels', action: 'label_updated', labels: ['ready-for-development', 'later'] });
    expect(route(event, pipeline, { previousLabels: ['ready-for-development'] })).toEqual({ ignored: 'no trigger matches' });
  });

  it('ignores a label removal (label_updated carries no diff)', () => {
    const event = issue({ kind: 'issue_labels', action: 'label_updated', labels: [] });
    expect(route(event, pipeline, { previousLabels: ['ready-for-development'] })).toEqual({ ignored: 'no trigger matches' });
  });

  it('treats every label as new when baton has never seen the issue', () => {
    const event = issue({ kind: 'issue_labels', action: 'label_updated', labels: ['ready-for-development'] });
    expect(stages(route(event, pipeline, fresh))).toEqual(['develop']);
  });

  it('compares labels case-insensitively', () => {
    const event = issue({ kind: 'issue_labels', action: 'label_updated', labels: ['Ready-For-Development'] });
    expect(route(event, pipeline, { previousLabels: ['ready-for-development'] })).toEqual({ ignored: 'no trigger matches' });
    expect(stages(route(event, pipeline, { previousLabels: [] }))).toEqual(['develop']);
  });

  it('takes the deploy environment from a deploy:<env> label, else the default', () => {
    const event = issue({ kind: 'issue_labels', action: 'label_updated', labels: ['deploy:production', 'ready-for-deployment'] });
    expect(only(route(event, pipeline, { previousLabels: ['deploy:production'] })).payload?.deployEnv).toBe('production');
    const plain = issue({ kind: 'issue_labels', action: 'label_updated', labels: ['ready-for-deployment'] });
    expect(only(route(plain, pipeline, { previousLabels: [] })).payload?.deployEnv).toBe('staging');
  });

  it('feeds the devops prompt only an environment of the strict form or from the configured list', () => {
    const labelled = (env: string) =>
      issue({ kind: 'issue_labels', action: 'label_updated', labels: [`deploy:${env}`, 'ready-for-deployment'] });
    const fresh = { previousLabels: [] };
    expect(only(route(labelled('eu-west.2'), pipeline, fresh)).payload?.deployEnv).toBe('eu-west.2');
    for (const hostile of ['$(curl evil)', '-x', 'prod; rm -rf /', 'a b', '../../etc', 'x'.repeat(64), '/deploy']) {
      expect(route(labelled(hostile), pipeline, fresh)).toEqual({ ignored: 'deploy label names an environment that is not allowed' });
    }

    const listed = parsePipelineConfig({ deploy: { environments: ['staging', 'Production'] } }, bots).pipeline;
    expect(only(route(labelled('production'), listed, fresh)).payload?.deployEnv).toBe('Production');
    expect(route(labelled('qa'), listed, fresh)).toEqual({ ignored: 'deploy label names an environment that is not allowed' });
    // Other stages the same event starts are not held back by a refused deploy label.
    const both = issue({
      kind: 'issue_labels',
      action: 'label_updated',
      labels: ['deploy:qa', 'ready-for-deployment', 'ready-for-testing'],
    });
    expect(stages(route(both, listed, fresh))).toEqual(['test']);
  });

  it("carries the stage's skipPermissions into the run, true unless the stage says otherwise", () => {
    const event = issue({ kind: 'issue_labels', action: 'label_updated', labels: ['ready-for-development'] });
    expect(only(route(event, pipeline, { previousLabels: [] })).payload?.skipPermissions).toBe(true);
    const asking = parsePipelineConfig({ stages: { develop: { skipPermissions: false } } }, bots).pipeline;
    expect(only(route(event, asking, { previousLabels: [] })).payload?.skipPermissions).toBe(false);
  });

  it('starts several stages when several labels are newly present', () => {
    const event = issue({ kind: 'issue_labels', action: 'label_updated', labels: ['ready-for-development', 'ready-for-testing'] });
    expect(stages(route(event, pipeline, { previousLabels: [] }))).toEqual(['develop', 'test']);
  });

  it('starts analyse for a new or edited human comment while the issue is in analysis', () => {
    const created = issue({ kind: 'issue_comment', action: 'created', comment: { id: 3, body: 'more detail', author: 'alice' } });
    expect(only(route(created, pipeline, fresh))).toMatchObject({ stage: 'analyse', payload: { commentId: 3 } });
    const edited = { ...created, action: 'edited' };
    expect(stages(route(edited, pipeline, fresh))).toEqual(['analyse']);
  });

  it('ignores a deleted comment', () => {
    const deleted = issue({ kind: 'issue_comment', action: 'deleted', comment: { body: 'x', author: 'alice' } });
    expect(route(deleted, pipeline, fresh)).toEqual({ ignored: 'no trigger matches' });
  });

  it('ignores a comment once the issue carries a later stage label', () => {
    for (const label of ['ready-for-development', 'bug', 'release', 'ready-for-testing']) {
      const event = issue({ kind: 'issue_comment', action: 'created', labels: [label], comment: { body: 'x', author: 'alice' } });
      expect(route(event, pipeline, fresh)).toEqual({ ignored: 'no trigger matches' });
    }
  });

  it('ignores a comment written by a bot account even when a human edits it', () => {
    const event = issue({ kind: 'issue_comment', action: 'edited', sender: 'alice', comment: { body: 'x', author: 'claude-dev' } });
    expect(route(event, pipeline, fresh)).toEqual({ ignored: 'bot sender' });
  });

  it('ignores plain PR comments by default', () => {
    const event = pr({ kind: 'pr_comment', action: 'created', comment: { body: 'x', author: 'alice' } });
    expect(route(event, pipeline, fresh)).toEqual({ ignored: 'no trigger matches' });
  });

  it('starts review-code as the review bot when a PR is opened or synchronized', () => {
    const opened = only(route(pr(), pipeline, fresh));
    expect(opened).toMatchObject({ stage: 'review-code', payload: { account: 'review', accountUser: 'claude-review', build: 'heavy' } });
    expect(stages(route(pr({ kind: 'pr_synchronized', action: 'synchronized' }), pipeline, fresh))).toEqual(['review-code']);
  });

  it('starts rework-pr on changes requested and test on approval; a review comment starts nothing', () => {
    const review = (state: 'approved' | 'rejected' | 'comment') =>
      pr({ kind: 'review', action: 'reviewed', review: { state, body: '' }, sender: 'carol' });
    expect(only(route(review('rejected'), pipeline, fresh))).toMatchObject({ stage: 'rework-pr', payload: { account: 'dev' } });
    expect(only(route(review('approved'), pipeline, fresh))).toMatchObject({ stage: 'test', payload: { account: 'review' } });
    expect(route(review('comment'), pipeline, fresh)).toEqual({ ignored: 'no trigger matches' });
  });

  it('starts test when ready-for-testing is added to a PR', () => {
    const event = pr({ kind: 'pr_labels', action: 'label_updated', labels: ['ready-for-testing'] });
    expect(stages(route(event, pipeline, { previousLabels: [] }))).toEqual(['test']);
  });

  it.each([
    [issue({ sender: 'claude-dev' }), 'bot sender'],
    [issue({ sender: 'Claude-Review' }), 'bot sender'],
    [issue({ kind: 'issue_closed', action: 'closed', state: 'closed' }), 'closed issue'],
    [issue({ kind: 'issue_labels', action: 'label_updated', state: 'closed', labels: ['ready-for-development'] }), 'closed issue'],
    [pr({ kind: 'pr_closed', action: 'closed', state: 'closed', merged: true }), 'merged pull request'],
    [pr({ kind: 'pr_synchronized', action: 'synchronized', state: 'closed' }), 'closed pull request'],
    [issue({ kind: 'push', action: '', number: undefined, state: undefined }), 'no trigger matches'],
    [issue({ kind: 'release', action: 'published', number: undefined, state: undefined }), 'no trigger matches'],
    [issue({ kind: 'other', action: 'assigned' }), 'no trigger matches'],
  ])('ignores %#: %s', (event, reason) => {
    expect(route(event, pipeline, fresh)).toEqual({ ignored: reason });
  });

  it('builds maintenance requests per configured repository', () => {
    const requests = maintenanceRequests([{ owner: 'acme', repo: 'app', cloneUrl: 'https://git.example/acme/app.git' }], pipeline, {
      slot: '2026-11-30T09:00Z',
    });
    expect(requests).toEqual([
      {
        stage: 'maintenance',
        owner: 'acme',
        repo: 'app',
        onDuplicate: 'followup',
        key: 'maintenance:acme/app@2026-11-30T09:00Z',
        payload: {
          account: 'dev',
          accountUser: 'claude-dev',
          build: 'light',
          skipPermissions: true,
          trigger: 'schedule 2026-11-30T09:00Z',
        },
      },
    ]);
  });
});

describe('route: configured pipeline', () => {
  it('uses renamed labels, changed accounts, added stages, removed stages and ignore-users', () => {
    const { pipeline: custom, problems } = parsePipelineConfig(
      {
        'ignore-users': ['Renovate'],
        labels: { 'ready-for-development': 'dev-ready' },
        deploy: { defaultEnv: 'production' },
        stages: {
          develop: { account: 'review', onDuplicate: 'drop' },
          analyse: false,
          docs: { account: 'dev', build: 'light', triggers: [{ label: 'docs' }] },
        },
      },
      bots,
    );
    expect(problems).toEqual([]);
    const labelled = (labels: string[]) => issue({ kind: 'issue_labels', action: 'label_updated', labels });
    expect(only(route(labelled(['dev-ready']), custom, { previousLabels: [] }))).toMatchObject({
      stage: 'develop',
      onDuplicate: 'drop',
      payload: { account: 'review', accountUser: 'claude-review' },
    });
    expect(route(labelled(['ready-for-development']), custom, { previousLabels: [] })).toEqual({ ignored: 'no trigger matches' });
    expect(only(route(labelled(['docs']), custom, { previousLabels: [] })).stage).toBe('docs');
    expect(route(issue(), custom, fresh)).toEqual({ ignored: 'no trigger matches' });
    expect(route(issue({ sender: 'renovate' }), custom, fresh)).toEqual({ ignored: 'ignored user' });
  });

  it('lets a trigger opt in to bot senders', () => {
    const { pipeline: custom } = parsePipelineConfig(
      { stages: { 'rework-pr': { triggers: [{ event: 'review_rejected', allowBots: true }] } } },
      bots,
    );
    const review = pr({ kind: 'review', action: 'reviewed', sender: 'claude-review', review: { state: 'rejected', body: '' } });
    expect(stages(route(review, custom, fresh))).toEqual(['rework-pr']);
    expect(route(pr({ sender: 'claude-dev' }), custom, fresh)).toEqual({ ignored: 'bot sender' });
  });
});
