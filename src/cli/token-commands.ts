import type { Config } from '../server/index.js';
import { createTokenStore, isTokenScope, TOKEN_SCOPES, TokenError, type TokenStore } from '../tokens/index.js';
import { parseCommand, subcommandOf, UsageError, type CommandGroup, type CommandSpec } from './args.js';
import { formatTime, table } from './format.js';
import { NoDatabaseError, openExistingStore } from './existing-store.js';
import { type CommandIo, visibleIo } from './io.js';

const TOKEN_CREATE = {
  command: 'baton token create',
  summary: 'Mints an API token and prints it; it is shown only this once.',
  options: {
    name: { type: 'string', value: 'NAME', required: true, description: 'who or what uses the token' },
    scope: {
      type: 'string',
      value: 'read|operate|admin',
      description:
        'read (default) only reads; operate also retries, cancels, pauses, resumes, replays and submits runs; admin also manages tokens',
    },
    json: { type: 'boolean', description: 'print JSON for scripts' },
  },
} as const satisfies CommandSpec;
const TOKEN_LIST = {
  command: 'baton token list',
  summary: 'Lists the API tokens: names, the first characters of each, last use, revoked or live.',
  options: { json: { type: 'boolean', description: 'print JSON for scripts' } },
} as const satisfies CommandSpec;
const TOKEN_REVOKE = {
  command: 'baton token revoke',
  positionals: ['ID_OR_NAME'],
  summary: 'Revokes an API token, by its id or name.',
  options: {},
} as const satisfies CommandSpec;

export const TOKEN_COMMANDS: CommandGroup = {
  command: 'baton token',
  summary:
    'API tokens, on the database directly (DATABASE_URL): works without a running server, on a database baton serve or baton migrate made.',
  subcommands: [TOKEN_CREATE, { ...TOKEN_LIST, aliases: ['ls'] }, TOKEN_REVOKE],
};

/**
 * `baton token create|list|revoke`: works on the database directly, so an operator can mint
 * tokens without a running server; the database must exist (`baton migrate` or `serve` made it). The command line is
 * checked first; `config` is asked for only then (undefined: it was bad and has been reported).
 */
export async function tokenCommand(argv: string[], rawIo: CommandIo, config: () => Config | undefined): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  const action = tokenAction(argv, io);
  const loaded = config();
  if (!loaded) return 1;
  let store;
  try {
    store = await openExistingStore(loaded);
  } catch (err) {
    if (!(err instanceof NoDatabaseError)) throw err;
    io.err(err.message);
    return 1;
  }
  try {
    return await action(createTokenStore({ store }));
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

function tokenAction(argv: string[], io: CommandIo): (tokens: TokenStore) => Promise<number> {
  const [spec, rest] = subcommandOf(TOKEN_COMMANDS, argv);
  if (spec === TOKEN_CREATE) {
    const { values } = parseCommand(TOKEN_CREATE, rest);
    const scope = values.scope ?? 'read';
    if (!isTokenScope(scope)) {
      throw new UsageError(`--scope must be one of ${TOKEN_SCOPES.join(', ')}, got "${scope.slice(0, 20)}"`, TOKEN_CREATE);
    }
    return async (tokens) => {
      const minted = await tokens.create(values.name!, scope);
      if (values.json) io.out(JSON.stringify(minted, null, 2));
      else {
        io.out(minted.token);
        io.err(
          `token "${minted.name}" (id ${minted.id}, scope ${minted.scope}) created. It is shown only now; store it (e.g. BATON_TOKEN).`,
        );
      }
      return 0;
    };
  }
  if (spec === TOKEN_REVOKE) {
    const [idOrName] = parseCommand(TOKEN_REVOKE, rest).positionals;
    if (idOrName === undefined) {
      throw new UsageError('baton token revoke needs the id or name of a token (see "baton token list")', TOKEN_REVOKE);
    }
    return async (tokens) => {
      const revoked = await tokens.revoke(idOrName);
      io.out(`token "${revoked.name}" (id ${revoked.id}) revoked`);
      return 0;
    };
  }
  const { values } = parseCommand(TOKEN_LIST, rest);
  return async (tokens) => {
    const list = await tokens.list();
    if (values.json) io.out(JSON.stringify(list, null, 2));
    else if (list.length === 0) io.out('no tokens');
    else {
      io.out(
        table(
          ['ID', 'NAME', 'SCOPE', 'TOKEN', 'CREATED', 'LAST USED', 'STATE'],
          list.map((t) => [
            t.id,
            t.name,
            t.scope,
            // A token the operator supplied (BATON_BOOTSTRAP_TOKEN) has nothing of it kept.
            t.hint === null ? '(supplied)' : `${t.hint}…`,
            formatTime(t.createdAt),
            formatTime(t.lastUsedAt),
            t.revokedAt ? `revoked ${formatTime(t.revokedAt)}` : 'live',
          ]),
        ),
      );
    }
    return 0;
  };
}
