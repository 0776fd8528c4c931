/**
 * The inbox's states and outcomes, as data.
 *
 * A delivery moves pending → processing → processed, and back from processing to pending when a
 * transient failure (forge API down, 5xx, 429, database trouble) puts it off with backoff. A
 * processing row whose lease expired (its worker died) is taken again as if pending. `processed`
 * is final: only a forced replay processes it again (it resets the row to pending).
 */
export const DELIVERY_STATUS = {
  pending: 'pending',
  processing: 'processing',
  processed: 'processed',
} as const;
export type DeliveryStatus = (typeof DELIVERY_STATUS)[keyof typeof DELIVERY_STATUS];

/**
 * Where a delivery came from: a forge webhook, catch-up from the forge API, or
 * an operator's replay of an earlier one (the inspector: a new row; it bypasses dedup).
 */
export const DELIVERY_SOURCE = {
  webhook: 'webhook',
  sync: 'sync',
  replay: 'replay',
} as const;
export type DeliverySource = (typeof DELIVERY_SOURCE)[keyof typeof DELIVERY_SOURCE];

/**
 * The kind of verdict a processed delivery got (`verdict` is the sentence for people):
 * - started: at least one stage was enqueued (queued, coalesced, follow-up or dropped as in progress);
 * - ignored: nothing to do (no trigger matches, event not handled here, unsupported event);
 * - not_permitted: the sender may not start stages (no write permission, unknown to the forge);
 * - invalid: the payload cannot be understood (missing fields, not an object);
 * - duplicate: an earlier copy of the same body (or delivery id) already had this effect;
 * - command: a ChatOps command (`@baton retry`) was carried out and answered;
 * - misconfigured: baton's own setup stops it (the bot token may not read permissions): an
 *   operator must act, then replay it.
 */
export const DELIVERY_OUTCOME = {
  started: 'started',
  ignored: 'ignored',
  notPermitted: 'not_permitted',
  invalid: 'invalid',
  duplicate: 'duplicate',
  misconfigured: 'misconfigured',
  command: 'command',
} as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOME)[keyof typeof DELIVERY_OUTCOME];

/** What is stored at accept time (or by catch-up). */
export interface NewDelivery {
  source: DeliverySource;
  /** The path it was delivered to, e.g. `/webhook/gitea`; catch-up uses its own name (`sync`). */
  endpoint: string;
  /** X-Gitea-Delivery, or null when the sender gave none. */
  deliveryId: string | null;
  /** X-Gitea-Event (coarse), e.g. `issues`. */
  event: string | null;
  /** X-Gitea-Event-Type (fine), e.g. `issue_label`. */
  eventType: string | null;
  /** The delivery headers baton reads, lower-case names; never a signature. */
  headers: Record<string, string>;
  /** The signed JSON payload text. */
  body: string;
  /** `owner/repo` (any case; stored lower-cased), or null for a repository-less event. */
  repository: string | null;
  /** Issue or pull-request number, when the payload names one. */
  number: number | null;
  /** @default now */
  receivedAt?: number;
  /**
   * Whether a webhook secret that applies to its repository signed it: then the repository is
   * one baton knows (manual submissions, known-repositories.ts). Not stored on the delivery.
   */
  signed?: boolean;
}

/** A stored delivery: what was accepted, and what processing has made of it so far. */
export interface Delivery extends Required<Omit<NewDelivery, 'signed'>> {
  id: number;
  bodySha256: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  outcome: DeliveryOutcome | null;
  verdict: string | null;
  runIds: number[];
  stages: string[];
  /** The label memory it diffed against (label-comparing events only), else null. */
  labelsBefore: string[] | null;
  processedAt: number | null;
}

/** A delivery taken by one worker; `leaseToken` fences its result against a re-take after expiry. */
export interface ClaimedDelivery {
  delivery: Delivery;
  leaseToken: string;
}

export interface DeliveryVerdict {
  outcome: DeliveryOutcome;
  verdict: string;
  runIds?: readonly number[];
  /** Stages acted on (so a later copy of the body does not act on them again). */
  stages?: readonly string[];
  /** The label memory this delivery diffed against (null = none, or not a label-comparing event). */
  labelsBefore?: readonly string[] | null;
}

export interface DeliveryFilter {
  repository?: string;
  /** Matches `event` or `event_type`. */
  event?: string;
  outcome?: DeliveryOutcome;
  source?: DeliverySource;
  status?: DeliveryStatus;
  /** Cursor: only deliveries with an id below this (pages go newest first). */
  before?: number;
  /** @default 50, at most 500 */
  limit?: number;
}

export interface DeliveryPage {
  deliveries: Delivery[];
  /** Pass as `before` for the next page; null on the last page. */
  nextCursor: number | null;
}
