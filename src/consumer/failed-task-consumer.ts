import type {Channel, ConsumeMessage} from 'amqplib';
import type {Pool} from 'pg';
import type {Logger} from '../logging/logger';
import type {AmqpConnection} from '../queue/amqp-connection';
import {FAILED_QUEUE} from '../queue/topology';

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

/** Acks or nacks; a closed channel means the broker redelivers by itself. */
function settle(action: () => void): void {
  try {
    action();
  } catch {
    // Channel gone: the broker redelivers it to a live consumer.
  }
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
  private channel?: Channel;
  private consumerTag?: string;
  private stopped = false;

  constructor(
    private readonly connection: AmqpConnection,
    private readonly pool: Pool,
    private readonly logger: Logger,
  ) {
    connection.on('connected', () => {
      this.subscribe().catch(error =>
        logger.error('Could not consume failed tasks', {
          error: (error as Error).message,
        }),
      );
    });
  }

  async start(): Promise<void> {
    this.stopped = false;
    if (this.connection.connected) await this.subscribe();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const channel = this.channel;
    this.channel = undefined;
    if (channel && this.consumerTag) {
      await channel.cancel(this.consumerTag).catch(() => undefined);
    }
    await channel?.close().catch(() => undefined);
  }

  private subscribing?: Promise<void>;

  private subscribe(): Promise<void> {
    if (this.stopped || this.channel) return Promise.resolve();
    this.subscribing ??= this.openSubscription().finally(() => {
      this.subscribing = undefined;
    });
    return this.subscribing;
  }

  private async openSubscription(): Promise<void> {
    const channel = await this.connection.createChannel();
    channel.on('close', () => {
      if (this.channel === channel) this.channel = undefined;
    });
    channel.on('error', error =>
      this.logger.warn('Failed-queue channel error', {error: error.message}),
    );
    await channel.prefetch(10);
    this.channel = channel;
    const {consumerTag} = await channel.consume(FAILED_QUEUE, message => {
      // handle() never rejects: it logs and acks whatever happens.
      if (message) this.handle(channel, message).catch(() => undefined);
    });
    this.consumerTag = consumerTag;
  }

  private async handle(
    channel: Channel,
    message: ConsumeMessage,
  ): Promise<void> {
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
      await this.pool.query(
        `INSERT INTO failed_task
           (execution_id, scheduler_id, type, task_id, params_scheduler, payload,
            failed_reason, retry_count, failed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         -- A second delivery of a run's failure (its ack was lost) is stored once.
         ON CONFLICT (execution_id) WHERE execution_id IS NOT NULL DO NOTHING`,
        [
          Number.isSafeInteger(executionId) && executionId > 0
            ? executionId
            : null,
          integerOrNull(body.scheduler_id),
          typeof body.type === 'string' ? body.type : null,
          integerOrNull(body.id),
          typeof body.params_scheduler === 'string'
            ? body.params_scheduler
            : null,
          body,
          String(body.failed_reason ?? 'unknown'),
          retryCount,
          failedAt,
        ],
      );
    } catch (error) {
      if (isTransientDatabaseError(error)) {
        this.logger.warn('Could not store failed task; requeued', {
          error: (error as Error).message,
          scheduler_id: body.scheduler_id,
          retry_in_ms: STORE_RETRY_DELAY_MS,
        });
        await new Promise(resolve => setTimeout(resolve, STORE_RETRY_DELAY_MS));
        settle(() => channel.nack(message, false, true));
        return;
      }
      this.logger.error('Could not store failed task', {
        error: (error as Error).message,
        scheduler_id: body.scheduler_id,
      });
    }
    settle(() => channel.ack(message));
  }
}
