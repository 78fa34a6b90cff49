import type {Channel, Options} from 'amqplib';
import {closeQuietly} from './close-quietly';

export const TASK_QUEUE = 'cron_scheduler';
export const RETRY_QUEUE = 'cron_scheduler_retry';
export const FAILED_QUEUE = 'cron_scheduler_failed';
/**
 * Report tasks wait here, consumed by report consumers of their own (their
 * own concurrency and timeout), so a long report never holds the slot a
 * cron task needs. The producer still publishes every task to
 * `cron_scheduler`; the task consumer hands report messages over.
 */
export const REPORT_QUEUE = 'cron_scheduler_reports';
/**
 * HTTP tasks wait here, consumed by HTTP consumers of their own (one call
 * each at a time, HTTP_TASK_CONCURRENCY of them), so a slow or hanging
 * target holds one of those and never the slot of another task kind.
 */
export const HTTP_QUEUE = 'cron_scheduler_http';
/**
 * Webhook deliveries (one message per delivery row) wait here, with retry
 * tiers of their own that empty back into this queue: a delivery is never
 * mixed with tasks, and a dead endpoint never holds a task slot.
 */
export const WEBHOOK_QUEUE = 'cron_scheduler_webhooks';
export const WEBHOOK_RETRY_QUEUE_PREFIX = 'cron_scheduler_webhooks_retry';
export const WEBHOOK_RETRY_ROUTING_PREFIX = 'webhook_retry';
export const DEAD_LETTER_EXCHANGE = 'cron_dlx';
export const RETRY_ROUTING_KEY = 'retry';
export const FAILED_ROUTING_KEY = 'failed';

export interface QueueSpec {
  name: string;
  options: Options.AssertQueue;
  /** Declared if missing; if it exists with other arguments it is kept as it is. */
  keepExisting?: boolean;
}

export interface Topology {
  exchanges: Array<{
    name: string;
    type: 'direct';
    options: Options.AssertExchange;
  }>;
  queues: QueueSpec[];
  bindings: Array<{queue: string; exchange: string; routingKey: string}>;
}

/** AMQP_QUEUE_TYPE: quorum (replicated, at-least-once dead-lettering) or classic. */
export type QueueType = 'quorum' | 'classic';
export const QUEUE_TYPES: readonly QueueType[] = ['quorum', 'classic'];

/**
 * A quorum queue hands a message out at most this many times: a guard
 * against a message requeued for ever. Past it RabbitMQ 3.10 dead-letters a
 * task queue's message to cron_scheduler_retry and holds it there (its way
 * back is a dead-letter cycle), and drops a webhook message (no dead-letter
 * exchange), so the consumers' repeating requeues go round through a retry
 * tier before it (requeueWithinDeliveryLimit). Far above what the
 * crash-loop guard (two unfinished starts) needs.
 */
export const DELIVERY_LIMIT = 50;

export interface RetrySettings {
  retryDelayMs: number;
  multiplier: number;
  maxRetries: number;
  /** The broker's queue type; quorum unless set. */
  queueType?: QueueType;
}

export interface RetryTier {
  /** Retry number, 1..maxRetries. */
  retry: number;
  delayMs: number;
  queue: string;
  routingKey: string;
}

/** Delay before retry n: base x multiplier^(n-1), in whole milliseconds. */
export function retryDelayMs(retry: number, settings: RetrySettings): number {
  return Math.round(settings.retryDelayMs * settings.multiplier ** (retry - 1));
}

/**
 * Where retry n waits. A queue has one TTL and a dead-lettered message keeps
 * no expiration of its own, so every delay, the base one included, gets its
 * own queue, named by its delay: changing CRON_RETRY_DELAY_MS or the
 * multiplier adds queues instead of clashing with existing ones (no queue
 * has to be deleted, which would lose the retries waiting in it), and old
 * ones still empty into `cron_scheduler`.
 */
export function retryTier(retry: number, settings: RetrySettings): RetryTier {
  const delayMs = retryDelayMs(retry, settings);
  return {
    retry,
    delayMs,
    queue: `${RETRY_QUEUE}_${delayMs}ms`,
    routingKey: `${RETRY_ROUTING_KEY}_${delayMs}ms`,
  };
}

/** Where a webhook delivery's retry n waits: the task tiers' delays, its own queues. */
export function webhookRetryTier(
  retry: number,
  settings: RetrySettings,
): RetryTier {
  const delayMs = retryDelayMs(retry, settings);
  return {
    retry,
    delayMs,
    queue: `${WEBHOOK_RETRY_QUEUE_PREFIX}_${delayMs}ms`,
    routingKey: `${WEBHOOK_RETRY_ROUTING_PREFIX}_${delayMs}ms`,
  };
}

export function retryTiers(
  settings: RetrySettings,
  tierOf: (retry: number, settings: RetrySettings) => RetryTier = retryTier,
): RetryTier[] {
  const tiers = new Map<string, RetryTier>();
  for (let retry = 1; retry <= settings.maxRetries; retry++) {
    const tier = tierOf(retry, settings);
    if (!tiers.has(tier.queue)) tiers.set(tier.queue, tier);
  }
  return [...tiers.values()];
}

/**
 * Arguments every queue of one type gets. Quorum queues (RabbitMQ's advice
 * for data safety, replicated on a cluster) dead-letter at least once only
 * with `x-dead-letter-strategy: at-least-once`, which needs `x-overflow:
 * reject-publish`; classic queues dead-letter at most once.
 */
function typeArguments(
  queueType: QueueType,
  deadLetters: boolean,
): Record<string, unknown> {
  if (queueType === 'classic') return {};
  return {
    'x-queue-type': 'quorum',
    ...(deadLetters
      ? {
          'x-dead-letter-strategy': 'at-least-once',
          'x-overflow': 'reject-publish',
        }
      : {}),
  };
}

/** The spec's broker topology plus the retry tiers, in one table: producer and consumer both assert it. */
export function brokerTopology(settings: RetrySettings): Topology {
  const queueType = settings.queueType ?? 'quorum';
  // Tier 1 is declared even without retries: a requeue near the delivery
  // limit goes round through it (see requeueWithinDeliveryLimit).
  const atLeastTierOne = {
    ...settings,
    maxRetries: Math.max(1, settings.maxRetries),
  };
  const tiers = retryTiers(atLeastTierOne);
  const webhookTiers = retryTiers(atLeastTierOne, webhookRetryTier);
  const delayQueue = (
    name: string,
    delayMs: number,
    backTo = TASK_QUEUE,
  ): QueueSpec => ({
    name,
    options: {
      durable: true,
      arguments: {
        ...typeArguments(queueType, true),
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': backTo,
        'x-message-ttl': delayMs,
      },
    },
  });
  /** A queue consumers take tasks from: a rejected message goes to the retry queue. */
  const workQueue = (
    name: string,
    extra: Record<string, unknown> = {},
  ): QueueSpec => ({
    name,
    options: {
      durable: true,
      arguments: {
        ...typeArguments(queueType, true),
        ...(queueType === 'quorum' ? {'x-delivery-limit': DELIVERY_LIMIT} : {}),
        ...extra,
        'x-dead-letter-exchange': DEAD_LETTER_EXCHANGE,
        'x-dead-letter-routing-key': RETRY_ROUTING_KEY,
      },
    },
  });
  const binding = (queue: string, routingKey: string) => ({
    queue,
    exchange: DEAD_LETTER_EXCHANGE,
    routingKey,
  });
  return {
    exchanges: [
      {name: DEAD_LETTER_EXCHANGE, type: 'direct', options: {durable: true}},
    ],
    queues: [
      workQueue(TASK_QUEUE, {'x-message-deduplication': true}),
      workQueue(REPORT_QUEUE),
      workQueue(HTTP_QUEUE),
      // The spec's queue, where the task queue dead-letters to; after a delay
      // change it keeps the TTL it was declared with (retries use the tiers).
      {...delayQueue(RETRY_QUEUE, settings.retryDelayMs), keepExisting: true},
      {
        name: FAILED_QUEUE,
        options: {durable: true, arguments: typeArguments(queueType, false)},
      },
      ...tiers.map(tier => delayQueue(tier.queue, tier.delayMs)),
      // Deliveries are retried by the webhook consumer itself (republished
      // to a tier), never dead-lettered: the queue needs no DLX.
      {
        name: WEBHOOK_QUEUE,
        options: {
          durable: true,
          arguments: {
            ...typeArguments(queueType, false),
            ...(queueType === 'quorum'
              ? {'x-delivery-limit': DELIVERY_LIMIT}
              : {}),
          },
        },
      },
      ...webhookTiers.map(tier =>
        delayQueue(tier.queue, tier.delayMs, WEBHOOK_QUEUE),
      ),
    ],
    bindings: [
      binding(RETRY_QUEUE, RETRY_ROUTING_KEY),
      binding(FAILED_QUEUE, FAILED_ROUTING_KEY),
      ...tiers.map(tier => binding(tier.queue, tier.routingKey)),
      ...webhookTiers.map(tier => binding(tier.queue, tier.routingKey)),
    ],
  };
}

/** The retry settings of a configuration. */
export function retrySettings(config: {
  cronRetryDelayMs: number;
  cronRetryDelayMultiplier: number;
  cronMaxRetries: number;
  amqpQueueType?: QueueType;
}): RetrySettings {
  return {
    retryDelayMs: config.cronRetryDelayMs,
    multiplier: config.cronRetryDelayMultiplier,
    maxRetries: config.cronMaxRetries,
    queueType: config.amqpQueueType ?? 'quorum',
  };
}

/** The broker already has a queue or exchange with other properties. */
export class TopologyMismatchError extends Error {
  override name = 'TopologyMismatchError';
}

/**
 * Declares the topology. A queue that exists with other arguments makes the
 * broker close the channel with PRECONDITION_FAILED; that becomes a
 * TopologyMismatchError naming the queue, so the process stops loudly
 * instead of publishing into a queue that behaves differently.
 */
export async function assertTopology(
  openChannel: () => Promise<Channel>,
  topology: Topology,
): Promise<void> {
  const open = async () => {
    const opened = await openChannel();
    // The channel emits 'error' as well as rejecting: keep it from crashing us.
    opened.on('error', () => undefined);
    return opened;
  };
  let channel = await open();
  let current = 'topology';
  try {
    for (const exchange of topology.exchanges) {
      current = `exchange ${exchange.name}`;
      await channel.assertExchange(
        exchange.name,
        exchange.type,
        exchange.options,
      );
    }
    for (const queue of topology.queues) {
      current = `queue ${queue.name}`;
      try {
        await channel.assertQueue(queue.name, queue.options);
      } catch (error) {
        if (!queue.keepExisting || (error as {code?: number}).code !== 406) {
          throw error;
        }
        // It exists with other arguments, which is allowed: the 406 closed the channel.
        channel = await open();
      }
    }
    for (const binding of topology.bindings) {
      current = `binding ${binding.exchange} -> ${binding.queue}`;
      await channel.bindQueue(
        binding.queue,
        binding.exchange,
        binding.routingKey,
      );
    }
    await closeQuietly(channel);
  } catch (error) {
    const code = (error as {code?: number}).code;
    if (code === 406) {
      throw new TopologyMismatchError(
        `RabbitMQ already has ${current} with other properties than this service declares ` +
          `(${(error as Error).message}). Classic queues of an earlier version: stop every ` +
          `process and run \`npm run queues:migrate\` (moves their messages to quorum queues), ` +
          `or set AMQP_QUEUE_TYPE=classic. Otherwise delete it or align the configuration.`,
      );
    }
    throw error;
  }
}
