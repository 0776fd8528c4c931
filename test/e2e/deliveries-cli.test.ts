import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInboxStore, DELIVERY_SOURCE, type InboxStore, type NewDelivery } from '../../src/ingress/index.js';
import { ADMIN_TOKEN, startTestApp, type TestApp } from '../helpers/app.js';
import { runBaton } from '../helpers/baton-bin.js';
import { newDelivery } from '../helpers/deliveries.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';

const delivery = (over: Partial<NewDelivery> = {}) =>
  newDelivery({
    eventType: 'issue_label',
    headers: { 'x-gitea-event': 'issues', 'x-gitea-event-type': 'issue_label', 'x-gitea-signature': 'c0ffee' },
    body: '{"action":"label_updated","number":1}',
    ...over,
  });

describe('baton deliveries, the built bin over the API', () => {
  let t: TestStore;
  let server: TestApp;
  let inbox: InboxStore;
  let env: Record<string, string>;
  const ids: number[] = [];

  beforeAll(async () => {
    t = await createSqliteTestStore();
    // Not started: no inbox worker; the test gives the verdicts itself.
    server = await startTestApp(t, { start: false });
    await t.store.migrate();
    await server.app.tokens.bootstrap(ADMIN_TOKEN);
    env = { BATON_URL: server.url, BATON_TOKEN: ADMIN_TOKEN };
    inbox = createInboxStore(t.store);
    ids.push((await inbox.insert(delivery())).id);
    ids.push((await inbox.insert(delivery({ source: DELIVERY_SOURCE.sync, endpoint: 'sync', number: 2, body: '{"n":2}' }))).id);
    ids.push((await inbox.insert(delivery({ number: 3, body: '{"n":3}' }))).id);
    const claimed = await inbox.claimNext(60_000);
    await t.store.transaction((_trx, scope) =>
      inbox.markProcessed(scope, claimed!, { outcome: 'ignored', verdict: 'ignored: no stage is triggered by label "bug"' }),
    );
  });
  afterAll(async () => {
    await server?.close();
    await t?.cleanup();
  });

  it('lists newest first with verdicts, filters, pages, and prints JSON for scripts', async () => {
    const [table, json, sync, first] = await Promise.all([
      runBaton(['deliveries', 'ls'], { env }),
      runBaton(['deliveries', 'ls', '--json'], { env }),
      runBaton(['deliveries', 'ls', '--source', 'sync', '--json'], { env }),
      runBaton(['deliveries', 'ls', '--limit', '2'], { env }),
    ]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+RECEIVED\s+SOURCE\s+EVENT\s+REPOSITORY\s+VERDICT\s+RUNS$/);
    expect(lines.slice(1).map((l) => Number(l.split(/\s+/)[0]))).toEqual([...ids].reverse());
    expect(lines.at(-1)).toContain('ignored: no stage is triggered by label "bug"');
    expect(lines.at(-1)).toContain('issues (issue_label)');
    expect(lines[1]).toMatch(/pending/);
    const page = JSON.parse(json.stdout) as { deliveries: Array<{ id: number }>; nextCursor: string | null };
    expect(page.deliveries.map((d) => d.id)).toEqual([...ids].reverse());
    expect((JSON.parse(sync.stdout) as typeof page).deliveries.map((d) => d.id)).toEqual([ids[1]]);

    const more = /more: baton deliveries ls --cursor (\S+)/.exec(first.stdout);
    expect(more).not.toBeNull();
    const rest = await runBaton(['deliveries', 'ls', '--limit', '2', '--cursor', more![1]!, '--json'], { env });
    expect((JSON.parse(rest.stdout) as typeof page).deliveries.map((d) => d.id)).toEqual([ids[0]]);
  });

  it('shows one delivery with its signature masked', async () => {
    const shown = await runBaton(['deliveries', 'show', String(ids[0])], { env });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/verdict\s+ignored: no stage is triggered by label "bug"/);
    expect(shown.stdout).toContain('x-gitea-signature: ******');
    expect(shown.stdout).not.toContain('c0ffee');
    expect(shown.stdout).toContain('BODY\n{"action":"label_updated","number":1}');
  });

  it('replays with an operate token and refuses with a read one', async () => {
    const { token } = await server.app.tokens.create('viewer', 'read');
    const refused = await runBaton(['deliveries', 'replay', String(ids[0])], { env: { ...env, BATON_TOKEN: token } });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(/needs operate/);
    const early = await runBaton(['deliveries', 'replay', String(ids[2])], { env });
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/is pending .*replay it once it has a verdict/);

    const replayed = await runBaton(['deliveries', 'replay', String(ids[0]), '--json'], { env });
    expect(replayed.code).toBe(0);
    const { delivery: copy } = JSON.parse(replayed.stdout) as { delivery: { id: number; source: string; replayOf: number } };
    expect(copy).toMatchObject({ source: 'replay', replayOf: ids[0] });
    const history = await runBaton(['deliveries', 'show', String(ids[0])], { env });
    expect(history.stdout).toMatch(new RegExp(`replayed\\s+by token "admin" as delivery #${copy.id}`));
  });

  it('refuses bad arguments with exit 2, naming them, and calls nothing', async () => {
    const answers = await Promise.all(
      [
        ['deliveries', 'ls', '--source', 'email'],
        ['deliveries', 'ls', '--limit', 'lots'],
        ['deliveries', 'ls', '--repo', 'acme'],
        ['deliveries', 'show', 'abc'],
        ['deliveries', 'replay'],
        ['deliveries', 'frob'],
      ].map((args) => runBaton(args, { env: { BATON_URL: 'http://127.0.0.1:9', BATON_TOKEN: ADMIN_TOKEN } })),
    );
    const messages = [
      /--source must be one of webhook, sync, replay, got "email"/,
      /--limit must be a whole number from 1 to 200, got "lots"/,
      /--repo must look like OWNER\/REPO, got "acme"/,
      /baton deliveries show: needs a delivery id \(a positive whole number\), got "abc"/,
      /baton deliveries replay: needs a delivery id/,
      /baton deliveries: unknown subcommand "frob"/,
    ];
    for (const [i, answer] of answers.entries()) {
      expect({ i, code: answer.code, stdout: answer.stdout }).toEqual({ i, code: 2, stdout: '' });
      expect(answer.stderr).toMatch(messages[i]!);
      expect(answer.stderr).toMatch(/usage: baton deliveries/);
    }
  });
});
