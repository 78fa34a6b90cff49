import type {AmqpConnection} from './amqp-connection';
import {HTTP_QUEUE, REPORT_QUEUE, TASK_QUEUE} from './topology';
import {closeQuietly} from './close-quietly';

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
      await closeQuietly(channel);
    } catch {
      stats.push({name, messages: null, consumers: null});
    }
  }
  return stats;
}

/**
 * Which work queues hold ready messages (true each), or null when one of
 * them cannot be read: a caller that must not act on a message that may be
 * waiting then does nothing.
 */
export async function busyWorkQueues(
  connection: AmqpConnection,
): Promise<{tasks: boolean; reports: boolean; http: boolean} | null> {
  const [tasks, reports, http] = await checkQueues(connection, [
    TASK_QUEUE,
    REPORT_QUEUE,
    HTTP_QUEUE,
  ]);
  if ([tasks, reports, http].some(queue => queue.messages === null)) {
    return null;
  }
  return {
    tasks: tasks.messages! > 0,
    reports: reports.messages! > 0,
    http: http.messages! > 0,
  };
}
