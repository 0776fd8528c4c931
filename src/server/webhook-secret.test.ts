import { describe, expect, it } from 'vitest';
import { announceWebhookSecret } from './webhook-secret.js';

const SECRET = 'f'.repeat(64);
const details = { file: '/var/lib/baton/webhook-secret', webhookUrl: 'https://baton.example.com/webhook/gitea' };

function recorder(isTTY: boolean) {
  const written: string[] = [];
  const warned: string[] = [];
  return {
    written,
    warned,
    terminal: { isTTY, write: (text: string) => written.push(text) === 0 },
    logger: {
      warn: ((...args: unknown[]) => void warned.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '))) as never,
    },
  };
}

describe('announceWebhookSecret', () => {
  it('shows the secret with the URL and content type on a terminal, and logs nothing', () => {
    const r = recorder(true);
    announceWebhookSecret(SECRET, { ...details, logger: r.logger, terminal: r.terminal });
    const shown = r.written.join('');
    expect(shown).toContain(`Secret:        ${SECRET}`);
    expect(shown).toContain('Target URL:    https://baton.example.com/webhook/gitea');
    expect(shown).toContain('Content type:  application/json');
    expect(shown).toContain('/var/lib/baton/webhook-secret (mode 0600)');
    expect(r.warned).toEqual([]);
  });

  it('without a terminal, logs where the 0600 file is and the URL, never the secret', () => {
    const r = recorder(false);
    announceWebhookSecret(SECRET, { ...details, logger: r.logger, terminal: r.terminal });
    expect(r.written).toEqual([]);
    expect(r.warned).toHaveLength(1);
    expect(r.warned[0]).toContain('/var/lib/baton/webhook-secret (mode 0600)');
    expect(r.warned[0]).toContain('https://baton.example.com/webhook/gitea');
    expect(r.warned[0]).not.toContain(SECRET);
  });
});
