/**
 * What the delivery headers say. Gitea sends the same values under four prefixes (Gitea, Gogs,
 * GitHub-compatible names; Forgejo adds its own), see reference/gitea/WEBHOOKS.md §2. Forgejo's
 * win when present, then Gitea's, then the fallbacks.
 */
export interface DeliveryHeaders {
  forge: 'gitea' | 'forgejo';
  delivery?: string;
  /** Coarse event (X-Gitea-Event): `issues`, `pull_request_approved`, … */
  event?: string;
  /** Fine event (X-Gitea-Event-Type): `issue_label`, `pull_request_review_approved`, … Preferred. */
  eventType?: string;
  /** First non-empty signature header (an empty one means the webhook has no secret). */
  signature?: string;
}

type HeaderGetter = (name: string) => string | undefined | null;

const PREFIXES = ['x-forgejo-', 'x-gitea-', 'x-gogs-', 'x-github-'] as const;

export function readDeliveryHeaders(get: HeaderGetter): DeliveryHeaders {
  const first = (suffix: string): string | undefined => {
    for (const prefix of PREFIXES) {
      const value = get(prefix + suffix)?.trim();
      if (value) return value;
    }
    return undefined;
  };
  const signature = [get('x-forgejo-signature'), get('x-gitea-signature'), get('x-gogs-signature'), get('x-hub-signature-256')]
    .map((v) => v?.trim())
    .find((v) => v !== undefined && v !== '' && v !== 'sha256=');
  return {
    forge: get('x-forgejo-event') ? 'forgejo' : 'gitea',
    delivery: first('delivery'),
    event: first('event'),
    eventType: first('event-type'),
    signature,
  };
}
