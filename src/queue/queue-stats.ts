import type {AmqpConnection} from './amqp-connection';

export interface QueueStats {
  name: string;
  /** Ready messages (a passive check does not count unacknowledged ones). */
  messages: number | null;
  consumers: number | null;
}

/**
 * A passive check of each queue, on a channel of its own (a queue that is
 * missing closes its channel): null counts for a queue that cannot be read.
 */
export async function checkQueues(
  connection: AmqpConnection,
  names: readonly string[],
): Promise<QueueStats[]> {
  const stats: QueueStats[] = [];
  for (const name of names) {
    try {
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      const {messageCount, consumerCount} = await channel.checkQueue(name);
      stats.push({name, messages: messageCount, consumers: consumerCount});
      await channel.close().catch(() => undefined);
    } catch {
      stats.push({name, messages: null, consumers: null});
    }
  }
  return stats;
}
