import type {Logger} from '../logging/logger';
import type {AmqpConnection} from '../queue/amqp-connection';
import {checkQueues, QueueStats} from '../queue/queue-stats';
import {cached, Metrics} from './metrics';
import {SCRAPE_CACHE_MS} from './scrape-readers';

/**
 * Queue depths and consumers, read at scrape time (cached). A queue that
 * cannot be read (it is missing, or the broker is not connected) loses its
 * series instead of keeping its last value: a stale `consumers 1` for a
 * queue nobody can see would hide the "no consumer" alert, which fires on
 * `absent()` too. A read that is only slow keeps the last values (see
 * Metrics.onScrape).
 */
export function watchQueueGauges(
  metrics: Metrics,
  connection: Pick<AmqpConnection, 'connected' | 'createChannel'>,
  names: readonly string[],
  logger: Logger,
  cacheMs = SCRAPE_CACHE_MS,
): void {
  const unreadable = (name: string): QueueStats => ({
    name,
    messages: null,
    consumers: null,
  });
  const queues = cached(cacheMs, async () => {
    const stats = connection.connected
      ? await checkQueues(connection as AmqpConnection, names)
      : names.map(unreadable);
    const missing = stats.filter(stat => stat.messages === null);
    // Once per read, not once per scrape and gauge.
    if (missing.length > 0) {
      logger.warn('Metrics: queue depths unreadable', {
        queues: missing.map(stat => stat.name),
        broker_connected: connection.connected,
      });
    }
    return stats;
  });
  for (const [key, field] of [
    ['queueMessages', 'messages'],
    ['queueConsumers', 'consumers'],
  ] as const) {
    metrics.onScrape(
      key,
      async gauge => {
        for (const queue of await queues()) {
          const value = queue[field];
          if (value === null) gauge.remove({queue: queue.name});
          else gauge.set({queue: queue.name}, value);
        }
      },
      error =>
        logger.warn('Metrics: queue depths unreadable', {
          error: error.message,
        }),
    );
  }
}
