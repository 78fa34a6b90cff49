import type {Channel} from 'amqplib';
import type {Pool} from 'pg';
import type {Logger} from '../logging/logger';
import type {AmqpConnection} from '../queue/amqp-connection';
import {FAILED_QUEUE} from '../queue/topology';
import {storeFailedTask} from '../database/failed-task-store';
import {Delivery} from './delivery';
import {Subscription} from './subscription';
import {failedBodyOf, failedLogFields, failedRecordOf} from './failed-message';
import {textOf} from '../logging/bounded-text';
import {isTransientDatabaseError} from '../database/transient-error';

/** How long a failed task waits before it is offered again after a database outage. */
export const STORE_RETRY_DELAY_MS = 1000;

/**
 * Consumes `cron_scheduler_failed`: logs `PERMANENTLY FAILED TASK`, keeps the
 * task in `failed_task` for inspection and re-drive, and acknowledges it. When
 * the database is unreachable the message is requeued after
 * STORE_RETRY_DELAY_MS, so the task is stored once the database is back (the
 * chaos suite found failed tasks acknowledged and missing from `failed_task`
 * after a database cut); a task the database refuses for good (bad data) is
 * logged and acknowledged, so it never loops.
 */
export class FailedTaskConsumer {
  readonly subscription: Subscription<Channel>;

  constructor(
    connection: AmqpConnection,
    private readonly pool: Pool,
    private readonly logger: Logger,
  ) {
    this.subscription = new Subscription({
      queue: FAILED_QUEUE,
      connection,
      logger,
      openChannel: c => c.createChannel(),
      consume: async channel => {
        await channel.prefetch(10);
        const {consumerTag} = await channel.consume(FAILED_QUEUE, message => {
          if (!message) return this.subscription.lost(channel);
          // handle() never rejects, and settles the delivery whatever happens.
          this.handle(new Delivery(channel, message)).catch(() => undefined);
        });
        return consumerTag;
      },
    });
  }

  /** True while subscribed to the failed queue on a live channel (readiness). */
  get consuming(): boolean {
    return this.subscription.active;
  }

  async start(): Promise<void> {
    await this.subscription.start();
  }

  async stop(): Promise<void> {
    await this.subscription.close();
  }

  /**
   * Never leaves a delivery unsettled: one that stayed unacked held a
   * prefetch slot for good, and ten (a `null` body each) stalled the queue,
   * so real failures never reached `failed_task`.
   */
  private async handle(delivery: Delivery): Promise<void> {
    try {
      await this.keep(delivery);
    } catch (error) {
      this.logger.error('Failed message could not be handled; acknowledged', {
        error: textOf((error as Error)?.message ?? error, 500),
      });
    } finally {
      delivery.ack();
    }
  }

  private async keep(delivery: Delivery): Promise<void> {
    const {message} = delivery;
    const body = failedBodyOf(message.content);
    const record = failedRecordOf(
      body,
      message.content,
      message.properties.headers ?? {},
      new Date(),
    );
    this.logger.error('PERMANENTLY FAILED TASK', failedLogFields(body, record));
    try {
      await storeFailedTask(this.pool, record);
    } catch (error) {
      if (isTransientDatabaseError(error)) {
        this.logger.warn('Could not store failed task; requeued', {
          error: (error as Error).message,
          scheduler_id: record.schedulerId,
          retry_in_ms: STORE_RETRY_DELAY_MS,
        });
        await new Promise(resolve => setTimeout(resolve, STORE_RETRY_DELAY_MS));
        delivery.nack(true);
        return;
      }
      this.logger.error('Could not store failed task', {
        error: (error as Error).message,
        scheduler_id: record.schedulerId,
        failed_reason: record.failedReason,
      });
    }
  }
}
