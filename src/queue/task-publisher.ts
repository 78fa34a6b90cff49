import type {ConfirmChannel} from 'amqplib';
import {once} from 'node:events';
import type {Logger} from '../logging/logger';
import type {AmqpConnection} from './amqp-connection';
import {encodeTaskMessage, TaskMessage} from './task-message';
import {TASK_QUEUE} from './topology';

/** Execution id → when the broker's confirm for its message arrived. */
export type Confirmations = Map<number, Date>;

export interface OutgoingTask {
  executionId: number;
  executionKey: string;
  message: TaskMessage;
}

/**
 * Publishes task messages so that none is lost silently: persistent, on a
 * confirm channel, `mandatory` (a message no queue takes comes back and counts
 * as not published), waiting for `drain` when the socket buffer is full.
 * Only what the broker confirmed is reported as published.
 */
export class TaskPublisher {
  private channel?: Promise<ConfirmChannel>;
  private readonly returned = new Set<string>();

  constructor(
    private readonly connection: AmqpConnection,
    private readonly logger: Logger,
  ) {
    connection.on('disconnected', () => (this.channel = undefined));
  }

  /** Publishes all; resolves with the runs the broker confirmed, and when. */
  async publish(tasks: OutgoingTask[]): Promise<Confirmations> {
    const confirmed: Confirmations = new Map();
    if (tasks.length === 0) return confirmed;
    let channel: ConfirmChannel;
    try {
      channel = await this.openChannel();
    } catch (error) {
      this.logger.warn('Publish skipped: broker unavailable', {
        tasks: tasks.length,
        error: (error as Error).message,
      });
      return confirmed;
    }
    const confirmations: Promise<void>[] = [];
    for (const task of tasks) {
      const messageId = `${task.executionId}`;
      let accepted = true;
      confirmations.push(
        new Promise<void>(resolve => {
          accepted = channel.publish(
            '',
            TASK_QUEUE,
            encodeTaskMessage(task.message),
            {
              persistent: true,
              mandatory: true,
              contentType: 'application/json',
              messageId,
              headers: {
                'x-execution-id': task.executionId,
                'x-execution-key': task.executionKey,
                'x-deduplication-header': `${task.message.scheduler_id}:${task.executionKey}`,
              },
            },
            error => {
              if (!error && !this.returned.delete(messageId)) {
                confirmed.set(task.executionId, new Date());
              }
              resolve();
            },
          );
        }),
      );
      // Backpressure: the socket buffer is full, wait before writing more.
      if (!accepted) await this.drained(channel);
    }
    await Promise.all(confirmations);
    const failed = tasks.length - confirmed.size;
    if (failed > 0) {
      this.logger.warn('Some publishes were not confirmed', {
        confirmed: confirmed.size,
        not_confirmed: failed,
      });
    }
    return confirmed;
  }

  async close(): Promise<void> {
    const channel = this.channel;
    this.channel = undefined;
    if (channel)
      await (
        await channel.catch(() => undefined)
      )
        ?.close()
        .catch(() => undefined);
  }

  private drained(channel: ConfirmChannel): Promise<void> {
    return Promise.race([
      once(channel, 'drain').then(() => undefined),
      once(channel, 'close').then(() => undefined),
    ]);
  }

  private openChannel(): Promise<ConfirmChannel> {
    if (!this.channel) {
      const opening = this.connection.createConfirmChannel().then(channel => {
        channel.on('return', message => {
          this.returned.add(String(message.properties.messageId));
          this.logger.error('Task message returned: no queue took it', {
            execution_key: message.properties.headers?.['x-execution-key'],
          });
        });
        channel.on('error', error =>
          this.logger.warn('Publish channel error', {error: error.message}),
        );
        channel.on('close', () => {
          if (this.channel === opening) this.channel = undefined;
        });
        return channel;
      });
      opening.catch(() => {
        if (this.channel === opening) this.channel = undefined;
      });
      this.channel = opening;
    }
    return this.channel;
  }
}
