import type {ConfirmChannel} from 'amqplib';
import type {Logger} from '../logging/logger';
import {
  DEAD_LETTER_EXCHANGE,
  DELIVERY_LIMIT,
  RetryTier,
} from '../queue/topology';
import {publishConfirmed} from './confirmed-publish';
import type {Delivery} from './delivery';
import {RETRY_COUNT_HEADER, retryCountOf} from './retry-count';

/** The quorum queue's count of earlier deliveries of a message; 0 on classic queues. */
export const DELIVERY_COUNT_HEADER = 'x-delivery-count';

/**
 * Deliveries after which a requeue goes round through the delay queue
 * instead: a few short of DELIVERY_LIMIT, because a channel or consumer
 * lost meanwhile returns the message and counts a delivery too.
 */
export const ROUND_AFTER_DELIVERIES = DELIVERY_LIMIT - 5;

export function deliveryCountOf(
  headers: Record<string, unknown> | undefined,
): number {
  const count = Number(headers?.[DELIVERY_COUNT_HEADER]);
  return Number.isSafeInteger(count) && count > 0 ? count : 0;
}

/**
 * The headers of the copy that goes round: without the broker's delivery
 * count (the copy is a new message), and with the retry count written
 * out, so the delay queue's `x-death` entry is not taken for a retry.
 */
export function roundCopyHeaders(
  headers: Record<string, unknown> | undefined,
): Record<string, unknown> {
  return {
    ...withoutDeliveryCount(headers),
    [RETRY_COUNT_HEADER]: retryCountOf(headers),
  };
}

/** A copy published anew starts its deliveries from nothing (a classic queue would keep a stale count). */
export function withoutDeliveryCount(
  headers: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const copy: Record<string, unknown> = {...headers};
  delete copy[DELIVERY_COUNT_HEADER];
  return copy;
}

/**
 * Requeues a delivery. One its quorum queue has delivered nearly
 * DELIVERY_LIMIT times goes round through the retry tier `round` instead (a
 * confirmed copy, then the ack of the original): past the limit RabbitMQ
 * would dead-letter the task queues' messages to cron_scheduler_retry, take
 * that queue's way back for a dead-letter cycle and hold them there for
 * ever, and would drop the webhook queue's, which has no dead-letter
 * exchange. The round is no retry: the copy keeps its retry count. `live`:
 * the delivery's channel still takes publishes.
 */
export async function requeueWithinDeliveryLimit(
  channel: ConfirmChannel,
  delivery: Delivery,
  round: RetryTier,
  logger: Logger,
  live: boolean,
): Promise<void> {
  const {message} = delivery;
  // Only the broker's count of a message it has handed out before: on a
  // first delivery the header is whatever its publisher wrote.
  const deliveries = message.fields.redelivered
    ? deliveryCountOf(message.properties.headers)
    : 0;
  if (deliveries < ROUND_AFTER_DELIVERIES || !live) {
    delivery.nack(true);
    return;
  }
  try {
    await publishConfirmed(
      channel,
      DEAD_LETTER_EXCHANGE,
      round.routingKey,
      message.content,
      {
        ...message.properties,
        headers: roundCopyHeaders(message.properties.headers),
      },
    );
  } catch (error) {
    logger.error(
      'Could not send the message round through the delay queue; requeued',
      {error: (error as Error).message, delivery_count: deliveries},
    );
    delivery.nack(true);
    return;
  }
  logger.warn(
    "Requeued through the delay queue: its deliveries reached the broker's limit",
    {delivery_count: deliveries, delay_ms: round.delayMs},
  );
  delivery.ack();
}
