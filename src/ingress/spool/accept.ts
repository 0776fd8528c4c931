import { errorMessage } from '../../background/index.js';
import { HttpError } from '../../web-kit/index.js';
import type { InboxStore, NewDelivery } from '../inbox/index.js';
import type { Spool } from './spool.js';

/**
 * The 202 body: the stored delivery's id (its verdict comes later, see the inbox), or, for a
 * delivery kept in the replica's spool while the database is away, `spooled` (it gets its id once
 * the spool drains into the inbox).
 */
export type WebhookAnswer = { ok: true; id: number } | { ok: true; spooled: true };

/** pino-compatible; only these levels are used. */
interface AcceptLogger {
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export interface DeliveryAcceptorDeps {
  inbox: Pick<InboxStore, 'insert'>;
  /**
   * Where a delivery goes when the inbox cannot store it within `acceptBudgetMs`; without one,
   * such a delivery is refused with 503.
   */
  spool?: Pick<Spool, 'append' | 'pending' | 'refused'>;
  /** How long the inbox insert may take before the delivery is spooled instead. @default 2_000 */
  acceptBudgetMs?: number;
  /** Called for every delivery refused with 503 (stored neither in the database nor in the spool). */
  onRefused?: () => void;
  logger: AcceptLogger;
}

/**
 * Storing a verified delivery, the same for every forge's endpoint (one spool per replica, whatever
 * forge delivered): into the inbox, or into the spool when the inbox has not committed it within
 * the budget (Gitea gives up after 5 s, GitHub after 10 s, and neither resends). An insert that
 * commits after all leaves a second copy once the spool drains, which the inbox's dedup makes a
 * `duplicate`. While the spool holds anything, new deliveries join it behind what it holds instead
 * of overtaking it: the label memory depends on the order deliveries arrive in. Only a delivery
 * stored in neither is refused, with an `HttpError` 503 (counted through `onRefused`).
 */
export function createDeliveryAcceptor(deps: DeliveryAcceptorDeps): (delivery: NewDelivery) => Promise<WebhookAnswer> {
  const acceptBudgetMs = deps.acceptBudgetMs ?? 2_000;
  const { logger } = deps;

  async function spooled(
    spool: NonNullable<DeliveryAcceptorDeps['spool']>,
    delivery: NewDelivery,
    dbError: unknown,
  ): Promise<WebhookAnswer> {
    try {
      await spool.append(delivery);
    } catch (err) {
      spool.refused(`spool: ${errorMessage(err)}; database: ${errorMessage(dbError)}`);
      throw refuse(delivery, err, dbError);
    }
    logger.warn(
      { delivery: delivery.deliveryId, endpoint: delivery.endpoint, err: errorMessage(dbError) },
      'webhook delivery spooled: the database could not store it in time',
    );
    return { ok: true, spooled: true };
  }

  function refuse(delivery: NewDelivery, err: unknown, dbError?: unknown): HttpError {
    deps.onRefused?.();
    logger.error(
      {
        delivery: delivery.deliveryId,
        endpoint: delivery.endpoint,
        err: errorMessage(err),
        ...(dbError === undefined ? {} : { database: errorMessage(dbError) }),
      },
      deps.spool ? 'webhook delivery refused: stored neither in the database nor in the spool' : 'webhook delivery could not be stored',
    );
    // The cause stays in the log: database and disk error text is not for the sender.
    return new HttpError(503, 'unavailable', 'temporarily unable to store the delivery', { cause: err });
  }

  return async function accept(delivery) {
    const spool = deps.spool;
    if (spool && spool.pending > 0) {
      try {
        await spool.append(delivery);
        return { ok: true, spooled: true };
      } catch {
        // The spool cannot take it (a full disk): the database may, and keeping the delivery
        // matters more than its place in the order.
      }
    }
    const inserted = deps.inbox.insert(delivery);
    let outcome: { id: number } | { err: unknown };
    if (!spool) {
      outcome = await inserted.then(
        (d) => ({ id: d.id }),
        (err: unknown) => ({ err }),
      );
    } else {
      let timer: NodeJS.Timeout | undefined;
      outcome = await Promise.race([
        inserted.then(
          (d) => ({ id: d.id }),
          (err: unknown) => ({ err }),
        ),
        new Promise<{ err: unknown }>((resolve) => {
          timer = setTimeout(() => resolve({ err: new Error(`the inbox did not commit within ${acceptBudgetMs} ms`) }), acceptBudgetMs);
        }),
      ]);
      clearTimeout(timer);
      // A late failure of an insert already given up on is harmless: the spool has the delivery.
      inserted.catch(() => {});
    }
    if ('id' in outcome) return { ok: true, id: outcome.id };
    if (spool) return spooled(spool, delivery, outcome.err);
    throw refuse(delivery, outcome.err);
  };
}
