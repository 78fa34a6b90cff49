import type {ConfirmChannel, ConsumeMessage} from 'amqplib';
import type {Logger} from '../logging/logger';
import type {AmqpConnection} from '../queue/amqp-connection';
import {
  parseTaskMessage,
  PoisonMessageError,
  schedulerParamsOf,
  TaskMessage,
  TaskType,
} from '../queue/task-message';
import {
  DEAD_LETTER_EXCHANGE,
  FAILED_ROUTING_KEY,
  retryTier,
  RetrySettings,
  TASK_QUEUE,
} from '../queue/topology';
import {
  TaskAborted,
  TaskContext,
  TaskExecutor,
} from '../executors/task-executor';
import {publishConfirmed} from './confirmed-publish';
import {CRASH_LOOP_REASON} from './crash-loop-guard';
import {RETRY_COUNT_HEADER, retryCountOf} from './retry-count';
import type {RunLedger, StartDecision} from './run-ledger';

export interface TaskConsumerOptions {
  connection: AmqpConnection;
  ledger: RunLedger;
  executors: Record<TaskType, TaskExecutor>;
  retry: RetrySettings;
  prefetch: number;
  logger: Logger;
  clock?: () => Date;
  /** For redeliveries: true when the run crash-looped its consumers (see crash-loop-guard). */
  isCrashLooping?: (
    executionId: number | undefined,
    retryCount: number,
  ) => Promise<boolean>;
}

type Headers = Record<string, unknown>;

/** Log lines for deliveries the run ledger recognised as duplicates. */
const DUPLICATE_DELIVERY: Record<Exclude<StartDecision, 'run'>, string> = {
  succeeded: 'Task already succeeded; redelivery acknowledged without running',
  failed:
    'Task already failed after its retries; duplicate acknowledged without running',
  skipped:
    'Run was skipped as older than the catch-up window; late delivery acknowledged without running',
  'attempt-already-ran':
    'Task attempt already ran and its retry is pending; duplicate acknowledged without running',
};

function executionIdOf(headers: Headers): number | undefined {
  const id = Number(headers['x-execution-id']);
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/**
 * Consumes `cron_scheduler` one task at a time. Success acks; a failure with
 * retries left publishes a copy to the next retry tier and acks only after the
 * broker confirmed it; the last failure publishes to `cron_scheduler_failed`
 * (confirmed) and then acks; a poison message goes there at once.
 */
export class TaskConsumer {
  private channel?: ConfirmChannel;
  private consumerTag?: string;
  private queue: Promise<void> = Promise.resolve();
  private running?: AbortController;
  private stopped = false;
  private readonly clock: () => Date;

  constructor(private readonly options: TaskConsumerOptions) {
    this.clock = options.clock ?? (() => new Date());
    options.connection.on('connected', () => {
      this.subscribe().catch(error =>
        options.logger.error('Could not consume tasks', {
          error: (error as Error).message,
        }),
      );
    });
  }

  /** Subscribes now if connected; otherwise on the next connect. */
  async start(): Promise<void> {
    this.stopped = false;
    if (this.options.connection.connected) await this.subscribe();
  }

  /**
   * Stops taking messages, gives the running task `graceMs` to finish, then
   * aborts it (its message is requeued) and closes the channel.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    const channel = this.channel;
    if (channel && this.consumerTag) {
      await channel.cancel(this.consumerTag).catch(() => undefined);
    }
    const drained = this.queue;
    const grace = new Promise<'timeout'>(resolve => {
      const timer = setTimeout(() => resolve('timeout'), graceMs);
      drained.then(
        () => clearTimeout(timer),
        () => clearTimeout(timer),
      );
    });
    if (
      (await Promise.race([drained.then(() => 'done' as const), grace])) ===
      'timeout'
    ) {
      this.options.logger.warn(
        'Shutdown grace over: stopping the running task',
        {
          grace_ms: graceMs,
        },
      );
      this.running?.abort();
      await drained;
    }
    this.channel = undefined;
    await channel?.close().catch(() => undefined);
  }

  private subscribing?: Promise<void>;

  /** One subscription at a time: start() and the 'connected' event may both ask. */
  private subscribe(): Promise<void> {
    if (this.stopped || this.channel) return Promise.resolve();
    this.subscribing ??= this.openSubscription().finally(() => {
      this.subscribing = undefined;
    });
    return this.subscribing;
  }

  private async openSubscription(): Promise<void> {
    const channel = await this.options.connection.createConfirmChannel();
    channel.on('close', () => {
      if (this.channel === channel) this.channel = undefined;
    });
    channel.on('error', error =>
      this.options.logger.warn('Consumer channel error', {
        error: error.message,
      }),
    );
    await channel.prefetch(this.options.prefetch);
    this.channel = channel;
    const {consumerTag} = await channel.consume(TASK_QUEUE, message => {
      if (!message) return; // cancelled by the broker (queue deleted)
      this.queue = this.queue.then(() => this.handle(channel, message));
    });
    this.consumerTag = consumerTag;
    this.options.logger.info('Consuming tasks', {
      queue: TASK_QUEUE,
      prefetch: this.options.prefetch,
    });
  }

  private async handle(
    channel: ConfirmChannel,
    message: ConsumeMessage,
  ): Promise<void> {
    try {
      await this.process(channel, message);
    } catch (error) {
      // Could not ack, retry or park (channel or broker trouble): requeue.
      this.options.logger.error('Task handling failed; message requeued', {
        error: (error as Error).message,
      });
      try {
        channel.nack(message, false, true);
      } catch {
        // The channel is gone: the broker redelivers unacked messages itself.
      }
    }
  }

  private async process(
    channel: ConfirmChannel,
    message: ConsumeMessage,
  ): Promise<void> {
    const headers: Headers = message.properties.headers ?? {};
    const retryCount = retryCountOf(headers);
    let task: TaskMessage;
    try {
      task = parseTaskMessage(message.content);
    } catch (error) {
      if (!(error instanceof PoisonMessageError)) throw error;
      await this.park(channel, message, undefined, error.message, retryCount);
      return;
    }
    const executionId = executionIdOf(headers);
    const executionKey = headers['x-execution-key'] as string | undefined;
    const attempt = retryCount + 1;
    const logger = this.options.logger.child({
      type: task.type,
      id: task.id,
      scheduler_id: task.scheduler_id,
      execution_key: executionKey,
      attempt,
      // Redelivered after a consumer or connection died mid-task, not a retry.
      ...(message.fields.redelivered ? {redelivered: true} : {}),
    });
    const {ledger} = this.options;
    if (
      message.fields.redelivered &&
      (await this.parkIfCrashLooping(channel, message, task, retryCount))
    ) {
      return;
    }
    const decision = await ledger.start(executionId, this.clock(), retryCount);
    if (decision !== 'run') {
      logger.info(DUPLICATE_DELIVERY[decision], {ledger_status: decision});
      channel.ack(message);
      return;
    }
    logger.info('Task started');
    const started = process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
    this.running = new AbortController();
    const context: TaskContext = {
      message: task,
      params: schedulerParamsOf(task),
      executionKey,
      attempt,
      logger,
      signal: this.running.signal,
    };
    try {
      await this.options.executors[task.type].execute(context);
    } catch (error) {
      if (error instanceof TaskAborted) {
        await ledger.interrupted(executionId);
        logger.warn('Task interrupted by shutdown; message requeued');
        channel.nack(message, false, true);
        return;
      }
      await this.failed(
        channel,
        message,
        task,
        error as Error,
        retryCount,
        elapsed(),
        logger,
      );
      return;
    } finally {
      this.running = undefined;
    }
    const duration = elapsed();
    await ledger.finished(executionId, 'succeeded', this.clock(), duration);
    logger.info('Task succeeded', {duration_ms: Math.round(duration)});
    channel.ack(message);
  }

  private async failed(
    channel: ConfirmChannel,
    message: ConsumeMessage,
    task: TaskMessage,
    error: Error,
    retryCount: number,
    durationMs: number,
    logger: Logger,
  ): Promise<void> {
    const {retry, ledger} = this.options;
    const executionId = executionIdOf(message.properties.headers ?? {});
    const reason = error.message;
    if (retryCount < retry.maxRetries) {
      const tier = retryTier(retryCount + 1, retry);
      await publishConfirmed(
        channel,
        DEAD_LETTER_EXCHANGE,
        tier.routingKey,
        message.content,
        {
          ...message.properties,
          headers: {
            ...message.properties.headers,
            [RETRY_COUNT_HEADER]: retryCount + 1,
          },
        },
      );
      await ledger.finished(
        executionId,
        'retrying',
        this.clock(),
        durationMs,
        reason,
      );
      logger.warn(
        `Scheduling retry ${tier.retry}/${retry.maxRetries} in ${tier.delayMs}ms`,
        {
          error: reason,
          duration_ms: Math.round(durationMs),
          retry: tier.retry,
          delay_ms: tier.delayMs,
        },
      );
      channel.ack(message);
      return;
    }
    await this.park(channel, message, task, reason, retryCount);
    await ledger.finished(
      executionId,
      'failed',
      this.clock(),
      durationMs,
      reason,
    );
    logger.error('Task failed after its last retry', {
      error: reason,
      retry_count: retryCount,
      duration_ms: Math.round(durationMs),
    });
  }

  /** Parks a run whose deliveries keep killing their consumer, instead of running it again. */
  private async parkIfCrashLooping(
    channel: ConfirmChannel,
    message: ConsumeMessage,
    task: TaskMessage,
    retryCount: number,
  ): Promise<boolean> {
    const executionId = executionIdOf(message.properties.headers ?? {});
    const check = this.options.isCrashLooping;
    if (!check || !(await check(executionId, retryCount))) return false;
    await this.park(channel, message, task, CRASH_LOOP_REASON, retryCount);
    await this.options.ledger.finished(
      executionId,
      'failed',
      this.clock(),
      0,
      CRASH_LOOP_REASON,
    );
    this.options.logger.error('Task parked: its deliveries crash-looped', {
      scheduler_id: task.scheduler_id,
      execution_id: executionId,
      failed_reason: CRASH_LOOP_REASON,
    });
    return true;
  }

  /** Publishes the failed task message (confirmed), then acks the original. */
  private async park(
    channel: ConfirmChannel,
    message: ConsumeMessage,
    task: TaskMessage | undefined,
    reason: string,
    retryCount: number,
  ): Promise<void> {
    const body = {
      ...(task ?? {raw: message.content.toString('utf8').slice(0, 65536)}),
      failed_at: this.clock().toISOString(),
      failed_reason: reason,
      retry_count: retryCount,
    };
    await publishConfirmed(
      channel,
      DEAD_LETTER_EXCHANGE,
      FAILED_ROUTING_KEY,
      Buffer.from(JSON.stringify(body)),
      {...message.properties, contentType: 'application/json'},
    );
    if (!task) {
      this.options.logger.error('Poison message parked in the failed queue', {
        failed_reason: reason,
      });
    }
    channel.ack(message);
  }
}
