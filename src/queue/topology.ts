import type {Channel, Options} from 'amqplib';

export const TASK_QUEUE = 'cron_scheduler';
export const RETRY_QUEUE = 'cron_scheduler_retry';
export const FAILED_QUEUE = 'cron_scheduler_failed';
export const DEAD_LETTER_EXCHANGE = 'cron_dlx';
export const RETRY_ROUTING_KEY = 'retry';
export const FAILED_ROUTING_KEY = 'failed';

export interface QueueSpec {
  name: string;
  options: Options.AssertQueue;
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

/** The spec's broker topology, in one table: producer and consumer both assert it. */
export function brokerTopology(retryDelayMs: number): Topology {
  return {
    exchanges: [
      {name: DEAD_LETTER_EXCHANGE, type: 'direct', options: {durable: true}},
    ],
    queues: [
      {
        name: TASK_QUEUE,
        options: {
          durable: true,
          arguments: {
            'x-message-deduplication': true,
            'x-dead-letter-exchange': DEAD_LETTER_EXCHANGE,
            'x-dead-letter-routing-key': RETRY_ROUTING_KEY,
          },
        },
      },
      {
        name: RETRY_QUEUE,
        options: {
          durable: true,
          arguments: {
            'x-dead-letter-exchange': '',
            'x-dead-letter-routing-key': TASK_QUEUE,
            'x-message-ttl': retryDelayMs,
          },
        },
      },
      {name: FAILED_QUEUE, options: {durable: true}},
    ],
    bindings: [
      {
        queue: RETRY_QUEUE,
        exchange: DEAD_LETTER_EXCHANGE,
        routingKey: RETRY_ROUTING_KEY,
      },
      {
        queue: FAILED_QUEUE,
        exchange: DEAD_LETTER_EXCHANGE,
        routingKey: FAILED_ROUTING_KEY,
      },
    ],
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
  const channel = await openChannel();
  let current = 'topology';
  // The channel emits 'error' as well as rejecting: keep it from crashing us.
  channel.on('error', () => undefined);
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
      await channel.assertQueue(queue.name, queue.options);
    }
    for (const binding of topology.bindings) {
      current = `binding ${binding.exchange} -> ${binding.queue}`;
      await channel.bindQueue(
        binding.queue,
        binding.exchange,
        binding.routingKey,
      );
    }
    await channel.close();
  } catch (error) {
    const code = (error as {code?: number}).code;
    if (code === 406) {
      throw new TopologyMismatchError(
        `RabbitMQ already has ${current} with other properties than this service declares ` +
          `(${(error as Error).message}). Delete it or align the configuration.`,
      );
    }
    throw error;
  }
}
