import { Hono } from 'hono';
import type { TokenStore } from '../tokens/index.js';
import type { AuthEnv } from './auth.js';

/**
 * Who am I (`GET /api/me`, any scope: the dashboard shows it and hides what the scope does not
 * allow) and the tokens (`GET /api/tokens`, admin only: names, scopes, hints, never a token).
 */
export function tokenRoutes(tokens: Pick<TokenStore, 'list'>): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.get('/api/me', (c) => {
    const { token, session } = c.get('caller');
    return c.json({
      token: { id: token.id, name: token.name, scope: token.scope },
      session: session ? { createdAt: session.createdAt, expiresAt: session.expiresAt } : null,
    });
  });
  app.get('/api/tokens', async (c) => c.json({ tokens: await tokens.list() }));
  return app;
}
