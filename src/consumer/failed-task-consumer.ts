import type {Channel} from 'amqplib';
import type {Pool} from 'pg';
import type {Logger} from '../logging/logger';
import type {AmqpConnection} from '../queue/amqp-connection';
import {FAILED_QUEUE} from '../queue/topology';
import {storeFailedTask} from '../database/failed-task-store';
import {Delivery} from './delivery';
import {Subscription} from './subscription';

interface FailedBody {
  type?: unknown;
  id?: unknown;
  scheduler_id?: unknown;
  params_scheduler?: unknown;
  failed_at?: unknown;
  failed_reason?: unknown;
  retry_count?: unknown;
  [key: string]: unknown;
}

const integerOrNull = (value: unknown) =>
  Number.isSafeInteger(value) ? (value as number) : null;

/** How long a failed task waits before it is offered again after a database outage. */
export const STORE_RETRY_DELAY_MS = 1000;

/**
 * True for errors that pass: the connection (no SQLSTATE, a Node socket
 * error, class 08), resources (53), operator intervention such as a restart
 * (57), system errors (58). A data or constraint error would fail again.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  const code = (error as {code?: unknown})?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return /^(08|53|57|58)/.test(code);
}

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
          // handle() never rejects: it logs and acks whatever happens.
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

  private async handle(delivery: Delivery): Promise<void> {
    const {message} = delivery;
    let body: FailedBody;
    try {
      body = JSON.parse(message.content.toString('utf8')) as FailedBody;
    } catch {
      body = {
        raw: message.content.toString('utf8'),
        failed_reason: 'unreadable failed message',
      };
    }
    const failedAt =
      typeof body.failed_at === 'string' &&
      !Number.isNaN(Date.parse(body.failed_at))
        ? body.failed_at
        : new Date().toISOString();
    const retryCount = integerOrNull(body.retry_count) ?? 0;
    this.logger.error('PERMANENTLY FAILED TASK', {
      type: body.type,
      id: body.id,
      scheduler_id: body.scheduler_id,
      retry_count: retryCount,
      failed_at: failedAt,
      failed_reason: body.failed_reason,
    });
    try {
      const executionId = Number(
        message.properties.headers?.['x-execution-id'],
      );
      await storeFailedTask(this.pool, {
        executionId:
          Number.isSafeInteger(executionId) && executionId > 0
            ? executionId
            : null,
        schedulerId: integerOrNull(body.scheduler_id),
        type: typeof body.type === 'string' ? body.type : null,
        taskId: integerOrNull(body.id),
        paramsScheduler:
          typeof body.params_scheduler === 'string'
            ? body.params_scheduler
            : null,
        payload: body,
        failedReason: String(body.failed_reason ?? 'unknown'),
        retryCount,
        failedAt,
      });
    } catch (error) {
      if (isTransientDatabaseError(error)) {
        this.logger.warn('Could not store failed task; requeued', {
          error: (error as Error).message,
          scheduler_id: body.scheduler_id,
          retry_in_ms: STORE_RETRY_DELAY_MS,
        });
        await new Promise(resolve => setTimeout(resolve, STORE_RETRY_DELAY_MS));
        delivery.nack(true);
        return;
      }
      this.logger.error('Could not store failed task', {
        error: (error as Error).message,
        scheduler_id: body.scheduler_id,
      });
    }
    delivery.ack();
  }
}
