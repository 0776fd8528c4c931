import type { Config } from '../config/index.js';
import { createStore } from '../store/index.js';
import { createTokenStore, TokenError } from '../tokens/index.js';
import { formatTime, parseArgs, table, UsageError } from './args.js';
import type { CommandIo } from './io.js';

/**
 * `baton token create|list|revoke`: works on the database directly (like `baton migrate`), so an
 * operator can mint the first tokens before or without a running server.
 */
export async function tokenCommand(argv: string[], io: CommandIo, config: Config): Promise<number> {
  const [sub, ...rest] = argv;
  if (!['create', 'list', 'ls', 'revoke'].includes(sub ?? '')) {
    throw new UsageError(`usage: baton token create --name NAME | list | revoke ID_OR_NAME${sub ? ` (unknown "${sub}")` : ''}`);
  }
  const store = createStore({ url: config.database.url, sqliteSynchronous: config.database.sqliteSynchronous });
  try {
    await store.migrate();
    const tokens = createTokenStore({ store });
    if (sub === 'create') {
      const { flags } = parseArgs(rest, { values: ['name'], booleans: ['json'] });
      if (typeof flags.name !== 'string') throw new UsageError('baton token create needs --name NAME (who or what uses the token)');
      const minted = await tokens.create(flags.name);
      if (flags.json) io.out(JSON.stringify(minted, null, 2));
      else {
        io.out(minted.token);
        io.err(`token "${minted.name}" (id ${minted.id}) created. It is shown only now; store it (e.g. BATON_TOKEN).`);
      }
      return 0;
    }
    if (sub === 'revoke') {
      const { positional } = parseArgs(rest, { booleans: [] });
      if (!positional[0]) throw new UsageError('baton token revoke needs the id or name of a token (see "baton token list")');
      const revoked = await tokens.revoke(positional[0]);
      io.out(`token "${revoked.name}" (id ${revoked.id}) revoked`);
      return 0;
    }
    const { flags } = parseArgs(rest, { booleans: ['json'] });
    const list = await tokens.list();
    if (flags.json) io.out(JSON.stringify(list, null, 2));
    else if (list.length === 0) io.out('no tokens');
    else {
      io.out(
        table(
          ['ID', 'NAME', 'TOKEN', 'CREATED', 'LAST USED', 'STATE'],
          list.map((t) => [
            t.id,
            t.name,
            `${t.hint}…`,
            formatTime(t.createdAt),
            formatTime(t.lastUsedAt),
            t.revokedAt ? `revoked ${formatTime(t.revokedAt)}` : 'live',
          ]),
        ),
      );
    }
    return 0;
  } catch (err) {
    if (err instanceof TokenError) {
      io.err(err.message);
      return 1;
    }
    throw err;
  } finally {
    await store.close();
  }
}
