import type {ConfirmChannel} from 'amqplib';
import {setTimeout as sleep} from 'node:timers/promises';
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
  TaskNotStarted,
  TaskContext,
  TaskExecutor,
} from '../executors/task-executor';
import {publishConfirmed} from './confirmed-publish';
import {CRASH_LOOP_REASON} from './crash-loop-guard';
import {Delivery} from './delivery';
import {retryMark} from './retry-mark';
import {RETRY_COUNT_HEADER, retryCountOf} from './retry-count';
import {resentOf} from './resent-count';
import type {RunLedger, StartDecision} from './run-ledger';
import {Subscription} from './subscription';
import type {Metrics} from '../metrics/metrics';
import {failureReason} from '../metrics/failure-reason';
import {isSaneRequestId} from '../logging/request-context';
import {REQUEST_ID_MESSAGE_HEADER} from '../queue/task-publisher';
import {
  requeueWithinDeliveryLimit,
  withoutDeliveryCount,
} from './delivery-limit-round';
import {
  attemptKey,
  MAX_NOT_STARTED_REQUEUES,
  NotStartedRequeues,
} from './not-started-requeues';

/** Task types another queue's consumers run: the message is moved there. */
export interface HandOff {
  types: ReadonlySet<TaskType>;
  queue: string;
}

export interface TaskConsumerOptions {
  connection: AmqpConnection;
  /** The queue consumed; `cron_scheduler` unless set (the report queue). */
  queue?: string;
  /** Moves these task types to their own queues instead of running them here. */
  handOffs?: HandOff[];
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
    resent: number,
    schedulerId: number,
  ) => Promise<boolean>;
  /** How long an outcome mark is retried before the message is acked anyway. */
  outcomeMarkRetryMs?: number;
  /** First wait before a delivery that could not be started is requeued; doubles up to 10 s. */
  requeueDelayMs?: number;
  /** The consumer's Prometheus metrics. */
  metrics?: Metrics;
}

/** Default of outcomeMarkRetryMs: with the kill grace, well inside the broker's consumer timeout. */
export const OUTCOME_MARK_RETRY_MS = 60_000;
/** What the log says while a mark is retried, and when it is given up. */
const OUTCOME_MARK = {
  retrying: 'Could not record the task outcome; retrying',
  gaveUp: 'Could not record the task outcome; message acknowledged without it',
};
const UNDONE_START_MARK = {
  retrying: 'Could not undo the start of a task that did not begin; retrying',
  gaveUp:
    'Could not undo the start of a task that did not begin; message requeued without it',
};
/**
 * How long the undo of a start is retried. Given up, the run stays
 * `running` and its redelivery would be counted as a start whose consumer
 * died (two such park it), so it is held while the database is away
 * (nothing could start meanwhile anyway), but well inside the broker's 30
 * minute consumer timeout: a last try against an unreachable host can
 * hang for the kernel's two-minute connect timeout.
 */
const UNDO_START_RETRY_MS = 20 * 60 * 1000;
const MAX_REQUEUE_DELAY_MS = 10_000;

type Headers = Record<string, unknown>;

/** Log lines for deliveries the run ledger recognised as duplicates, or as runs of a deleted scheduler. */
const DUPLICATE_DELIVERY: Record<
  Exclude<StartDecision, 'run' | 'foreign'>,
  string
> = {
  succeeded: 'Task already succeeded; redelivery acknowledged without running',
  failed:
    'Task already failed after its retries; duplicate acknowledged without running',
  skipped:
    'Run was skipped as older than the catch-up window; late delivery acknowledged without running',
  'attempt-already-ran':
    'Task attempt already ran and its retry is pending; duplicate acknowledged without running',
  superseded:
    'Message replaced by a copy the lost-run sweep sent; acknowledged without running',
  'scheduler-deleted':
    "Run's scheduler was deleted; delivery acknowledged without running",
};

/** Why a delivery whose x-execution-id names another scheduler's run is parked. */
export function foreignRunReason(executionId: number, schedulerId: number) {
  return `x-execution-id ${executionId} names a run of another scheduler than ${schedulerId}: not a delivery of that run, so not run (a forged or reused id)`;
}

function executionIdOf(headers: Headers): number | undefined {
  const id = Number(headers['x-execution-id']);
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/** The longest execution key the service writes is 43 characters (`manual-<uuid>`). */
const MAX_EXECUTION_KEY_LENGTH = 200;

/**
 * The delivery's x-execution-key when it is a key as the service writes
 * them (short printable text), else none: it goes into every log line of
 * the task and an HTTP target's idempotency key, so a 20 KB or multi-line
 * header must not (review: a 20 KB key made every line 20 KB).
 */
function executionKeyOf(headers: Headers): string | undefined {
  const key = headers['x-execution-key'];
  return typeof key === 'string' &&
    key.length <= MAX_EXECUTION_KEY_LENGTH &&
    /^[\x21-\x7e]+$/.test(key)
    ? key
    : undefined;
}

/**
 * Consumes `cron_scheduler` one task at a time. Success acks; a failure with
 * retries left publishes a copy to the next retry tier and acks only after the
 * broker confirmed it; the last failure publishes to `cron_scheduler_failed`
 * (confirmed) and then acks; a poison message goes there at once.
 */
export class TaskConsumer {
  readonly subscription: Subscription<ConfirmChannel>;
  private queue: Promise<void> = Promise.resolve();
  private running?: {controller: AbortController; channel: ConfirmChannel};
  private stopped = false;
  /** Wakes a delayed requeue at shutdown. */
  private stopSignal = new AbortController();
  /** Ends outcome-mark retries once the shutdown grace is over. */
  private graceOver = new AbortController();
  private startFailures = 0;
  private readonly notStartedRequeues = new NotStartedRequeues();
  private readonly clock: () => Date;
  private readonly queueName: string;

  constructor(private readonly options: TaskConsumerOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.queueName = options.queue ?? TASK_QUEUE;
    this.subscription = new Subscription({
      queue: this.queueName,
      connection: options.connection,
      logger: options.logger,
      openChannel: connection => connection.createConfirmChannel(),
      consume: channel => this.consume(channel),
      onChannelClosed: channel => this.channelClosed(channel),
    });
  }

  /** True while subscribed to the task queue on a live channel (readiness). */
  get consuming(): boolean {
    return this.subscription.active;
  }

  /** Subscribes now if connected; otherwise on the next connect. */
  async start(): Promise<void> {
    this.stopped = false;
    this.stopSignal = new AbortController();
    this.graceOver = new AbortController();
    await this.subscription.start();
  }

  /**
   * Stops taking messages, gives the running task `graceMs` to finish, then
   * aborts it (its message is requeued) and closes the channel.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    this.stopSignal.abort();
    await this.subscription.cancel();
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
      this.running?.controller.abort();
      this.graceOver.abort();
      await drained;
    }
    await this.subscription.close();
  }

  private async consume(channel: ConfirmChannel): Promise<string> {
    await channel.prefetch(this.options.prefetch);
    const {consumerTag} = await channel.consume(this.queueName, message => {
      if (!message) {
        this.subscription.lost(channel);
        return;
      }
      const delivery = new Delivery(channel, message);
      this.queue = this.queue.then(() => this.handle(channel, delivery));
    });
    this.options.logger.info('Consuming tasks', {
      queue: this.queueName,
      prefetch: this.options.prefetch,
    });
    return consumerTag;
  }

  /** The broker requeues what this channel held: a task still running there is stopped. */
  private channelClosed(channel: ConfirmChannel): void {
    if (this.running?.channel !== channel) return;
    this.options.logger.warn(
      'Consumer channel closed mid-task: stopping the task; the broker redelivers it',
    );
    this.running.controller.abort();
  }

  private async handle(
    channel: ConfirmChannel,
    delivery: Delivery,
  ): Promise<void> {
    if (!this.subscription.isLive(channel)) {
      // Its channel died or shutdown began while it waited: the broker redelivers it.
      this.options.logger.info('Stale delivery not started; requeued', {
        stopping: this.stopped,
      });
      delivery.nack(true);
      return;
    }
    try {
      await this.process(channel, delivery);
    } catch (error) {
      if (delivery.settled) {
        this.options.logger.error(
          'Task handling failed after its message was settled',
          {
            error: (error as Error).message,
          },
        );
        return;
      }
      // Could not start, retry or park (database or broker trouble).
      await this.requeueAfterPause(
        channel,
        delivery,
        this.startFailures++,
        this.options.logger,
        'error',
        'Task handling failed; message requeued',
        {error: (error as Error).message},
      );
    }
  }

  /**
   * Requeues a delivery after a pause that doubles with each failure before
   * it (`failuresBefore`) up to MAX_REQUEUE_DELAY_MS: never a hot loop.
   */
  private async requeueAfterPause(
    channel: ConfirmChannel,
    delivery: Delivery,
    failuresBefore: number,
    logger: Logger,
    level: 'warn' | 'error',
    text: string,
    fields: Record<string, unknown>,
  ): Promise<void> {
    const delayMs = Math.min(
      MAX_REQUEUE_DELAY_MS,
      (this.options.requeueDelayMs ?? 1000) * 2 ** failuresBefore,
    );
    logger[level](text, {...fields, requeue_in_ms: delayMs});
    await sleep(delayMs, undefined, {signal: this.stopSignal.signal}).catch(
      () => undefined,
    );
    await this.requeue(channel, delivery, logger);
  }

  /** Requeues a delivery, round through the first retry tier near the delivery limit. */
  private async requeue(
    channel: ConfirmChannel,
    delivery: Delivery,
    logger: Logger,
  ): Promise<void> {
    await requeueWithinDeliveryLimit(
      channel,
      delivery,
      retryTier(1, this.options.retry),
      logger,
      this.subscription.isLive(channel),
    );
  }

  /**
   * Records an outcome of a task that ran. Retried with backoff for a bounded
   * time, then logged: the message is acked either way, because requeueing it
   * would run the task again.
   */
  private async markOutcome(
    mark: () => Promise<void>,
    logger: Logger,
    what = OUTCOME_MARK,
    deadlineMs = this.options.outcomeMarkRetryMs ?? OUTCOME_MARK_RETRY_MS,
  ): Promise<void> {
    const recorded = await retryMark(mark, {
      deadlineMs,
      signal: this.graceOver.signal,
      onRetry: (error, delayMs) =>
        logger.warn(what.retrying, {
          error: error.message,
          retry_in_ms: delayMs,
        }),
    });
    if (!recorded) {
      logger.error(what.gaveUp, {gave_up_after_ms: deadlineMs});
    }
  }

  /**
   * The executor could not begin the task (TaskNotStarted: its definition
   * could not be read, the database being away). Nothing ran, so no retry
   * is spent: the start is undone (held while the database stays away, see
   * UNDO_START_RETRY_MS) and the delivery requeued after a pause that grows
   * with each such requeue of this attempt. Past MAX_NOT_STARTED_REQUEUES
   * it returns false: the caller takes it as the attempt failing.
   */
  private async requeuedNotStarted(
    channel: ConfirmChannel,
    delivery: Delivery,
    task: TaskMessage,
    executionId: number | undefined,
    startedAt: Date,
    key: string,
    error: TaskNotStarted,
    logger: Logger,
  ): Promise<boolean> {
    const requeues = this.notStartedRequeues.add(key);
    if (requeues > MAX_NOT_STARTED_REQUEUES) {
      this.notStartedRequeues.forget(key);
      logger.error('Task could not start again; counted as a failed attempt', {
        error: error.message,
        requeues: MAX_NOT_STARTED_REQUEUES,
      });
      return false;
    }
    await this.markOutcome(
      () => this.options.ledger.notStarted(executionId, startedAt, task),
      logger,
      UNDONE_START_MARK,
      UNDO_START_RETRY_MS,
    );
    await this.requeueAfterPause(
      channel,
      delivery,
      requeues - 1,
      logger,
      'warn',
      'Task could not start; message requeued',
      {error: error.message, requeue: requeues, of: MAX_NOT_STARTED_REQUEUES},
    );
    return true;
  }

  private async process(
    channel: ConfirmChannel,
    delivery: Delivery,
  ): Promise<void> {
    const {message} = delivery;
    const headers: Headers = message.properties.headers ?? {};
    const retryCount = retryCountOf(headers);
    const resent = resentOf(headers);
    let task: TaskMessage;
    try {
      task = parseTaskMessage(message.content);
    } catch (error) {
      if (!(error instanceof PoisonMessageError)) throw error;
      await this.park(channel, delivery, undefined, error.message, retryCount);
      return;
    }
    const handOff = this.options.handOffs?.find(h => h.types.has(task.type));
    if (handOff) {
      await this.handOver(channel, delivery, handOff.queue);
      return;
    }
    const executionId = executionIdOf(headers);
    const executionKey = executionKeyOf(headers);
    const attempt = retryCount + 1;
    const logger = this.options.logger.child({
      type: task.type,
      id: task.id,
      scheduler_id: task.scheduler_id,
      execution_key: executionKey,
      attempt,
      // Redelivered after a consumer or connection died mid-task, not a retry.
      ...(message.fields.redelivered ? {redelivered: true} : {}),
      // A copy the lost-run sweep sent: its original never came back.
      ...(resent > 0 ? {resent} : {}),
      // The API request that caused the run (run now, re-drive), when sane.
      ...(isSaneRequestId(headers[REQUEST_ID_MESSAGE_HEADER])
        ? {request_id: headers[REQUEST_ID_MESSAGE_HEADER]}
        : {}),
    });
    const {ledger} = this.options;
    if (
      message.fields.redelivered &&
      (await this.parkIfCrashLooping(channel, delivery, task, retryCount))
    ) {
      return;
    }
    const executor = this.options.executors[task.type];
    // An executor whose statement marks the start itself: no mark here.
    const startsInTask =
      executor.marksRunStart === true && executionId !== undefined;
    // This delivery's start: an interrupted mark undoes only this one.
    const startedAt = this.clock();
    if (!startsInTask) {
      const decision = await ledger.start(
        executionId,
        startedAt,
        retryCount,
        resent,
        task.scheduler_id,
      );
      this.startFailures = 0;
      if (decision !== 'run') {
        await this.notStarted(channel, delivery, task, decision, logger);
        return;
      }
      if (!this.subscription.isLive(channel)) {
        // The channel died or shutdown began while the start was being marked.
        await ledger
          .interrupted(executionId, startedAt, task)
          .catch(() => undefined);
        logger.info('Stale delivery not started; requeued', {
          stopping: this.stopped,
        });
        delivery.nack(true);
        return;
      }
    }
    const started = process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
    // 'refused': the executor's statement found the delivery a duplicate.
    const run: {start?: 'started' | 'refused'} = startsInTask
      ? {}
      : {start: 'started'};
    const markStarted = () => {
      this.startFailures = 0;
      logger.info('Task started');
      this.recordStart(task, headers, retryCount);
    };
    if (run.start === 'started') markStarted();
    const controller = new AbortController();
    this.running = {controller, channel};
    const context: TaskContext = {
      message: task,
      params: schedulerParamsOf(task),
      executionKey,
      attempt,
      logger,
      signal: controller.signal,
      ...(startsInTask
        ? {
            run: {
              executionId: executionId!,
              retryCount,
              resent,
              startedAt,
              finish: () => ({at: this.clock(), durationMs: elapsed()}),
              started: (value: boolean) => {
                run.start = value ? 'started' : 'refused';
                if (value) markStarted();
              },
            },
          }
        : {}),
    };
    let failure: Error | undefined;
    try {
      await executor.execute(context);
    } catch (error) {
      failure = error as Error;
    } finally {
      this.running = undefined;
      if (run.start === 'started') {
        this.options.metrics?.count('tasksInProgress', {}, -1);
      }
      this.options.metrics?.set('consumerLastTask', {}, Date.now() / 1000);
    }
    if (run.start === 'refused') {
      await this.refusedInTask(
        channel,
        delivery,
        task,
        executionId!,
        resent,
        logger,
      );
      return;
    }
    if (run.start === undefined) {
      // The executor's statement never committed (it failed, or the task
      // failed before it): the start is marked here, as for other tasks.
      const decision = await ledger.start(
        executionId,
        startedAt,
        retryCount,
        resent,
        task.scheduler_id,
      );
      if (decision !== 'run') {
        await this.notStarted(channel, delivery, task, decision, logger);
        return;
      }
      markStarted();
      this.options.metrics?.count('tasksInProgress', {}, -1);
      failure ??= new Error('the task did not report its start');
    }
    // Built only when a not-started requeue is counted: not per task.
    const thisAttempt = () =>
      attemptKey(task.scheduler_id, task.id, executionKey, retryCount);
    if (
      failure instanceof TaskNotStarted &&
      (await this.requeuedNotStarted(
        channel,
        delivery,
        task,
        executionId,
        startedAt,
        thisAttempt(),
        failure,
        logger,
      ))
    ) {
      return;
    }
    if (!this.notStartedRequeues.empty) {
      this.notStartedRequeues.forget(thisAttempt());
    }
    if (failure instanceof TaskAborted) {
      await ledger.interrupted(executionId, startedAt, task).catch(markError =>
        logger.warn('Could not mark the interrupted run', {
          error: (markError as Error).message,
        }),
      );
      logger.warn(
        this.stopped
          ? 'Task interrupted by shutdown; message requeued'
          : 'Task interrupted: its channel closed; the broker redelivers it',
      );
      delivery.nack(true);
      return;
    }
    if (failure) {
      await this.failed(
        channel,
        delivery,
        task,
        failure,
        retryCount,
        elapsed(),
        logger,
      );
      return;
    }
    const duration = elapsed();
    this.recordDuration(task, 'succeeded', duration);
    // Unless the executor's own statement already committed the mark.
    if (!startsInTask) {
      await this.markOutcome(
        () =>
          ledger.finished(
            executionId,
            'succeeded',
            this.clock(),
            duration,
            undefined,
            retryCount,
          ),
        logger,
      );
    }
    logger.info('Task succeeded', {duration_ms: Math.round(duration)});
    delivery.ack();
  }

  /**
   * A delivery the executor's statement did not start: a duplicate, acked
   * with the ledger's reason. Should its row be gone by now (no reason to
   * give), it is requeued: nothing ran, and the redelivery runs it.
   */
  private async refusedInTask(
    channel: ConfirmChannel,
    delivery: Delivery,
    task: TaskMessage,
    executionId: number,
    resent: number,
    logger: Logger,
  ): Promise<void> {
    const decision = await this.options.ledger.whyNotStarted(
      executionId,
      resent,
      task.scheduler_id,
    );
    if (decision === 'run') {
      logger.warn('Run vanished while its delivery started; requeued');
      delivery.nack(true);
      return;
    }
    await this.notStarted(channel, delivery, task, decision, logger);
  }

  /**
   * A delivery the ledger did not start: a duplicate, or a run of a deleted
   * scheduler, is acknowledged with the ledger's reason; one naming another
   * scheduler's run is parked (it touched nothing of that run, whose own
   * message still runs it).
   */
  private async notStarted(
    channel: ConfirmChannel,
    delivery: Delivery,
    task: TaskMessage,
    decision: Exclude<StartDecision, 'run'>,
    logger: Logger,
  ): Promise<void> {
    if (decision === 'foreign') {
      const headers = delivery.message.properties.headers ?? {};
      const reason = foreignRunReason(
        executionIdOf(headers)!,
        task.scheduler_id,
      );
      await this.park(channel, delivery, task, reason, retryCountOf(headers));
      logger.error('Task parked: its execution id names another scheduler', {
        failed_reason: reason,
      });
      return;
    }
    logger.info(DUPLICATE_DELIVERY[decision], {
      ledger_status: decision,
      execution_id: executionIdOf(delivery.message.properties.headers ?? {}),
    });
    delivery.ack();
  }

  private async failed(
    channel: ConfirmChannel,
    delivery: Delivery,
    task: TaskMessage,
    error: Error,
    retryCount: number,
    durationMs: number,
    logger: Logger,
  ): Promise<void> {
    const {message} = delivery;
    const {retry, ledger} = this.options;
    const executionId = executionIdOf(message.properties.headers ?? {});
    const reason = error.message;
    const willRetry = retryCount < retry.maxRetries;
    this.recordFailure(task, error, willRetry, durationMs);
    if (willRetry) {
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
      await this.markOutcome(
        () =>
          ledger.finished(
            executionId,
            'retrying',
            this.clock(),
            durationMs,
            reason,
            retryCount,
            task,
          ),
        logger,
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
      delivery.ack();
      return;
    }
    await this.park(channel, delivery, task, reason, retryCount);
    await this.markOutcome(
      () =>
        ledger.finished(
          executionId,
          'failed',
          this.clock(),
          durationMs,
          reason,
          retryCount,
        ),
      logger,
    );
    logger.error('Task failed after its last retry', {
      error: reason,
      retry_count: retryCount,
      duration_ms: Math.round(durationMs),
    });
  }

  /** In progress, and the queue wait of a first attempt (publish → start). */
  private recordStart(
    task: TaskMessage,
    headers: Headers,
    retryCount: number,
  ): void {
    const {metrics} = this.options;
    if (!metrics) return;
    metrics.count('tasksInProgress');
    const publishedAt = Number(headers['x-published-at']);
    // A retry's wait holds its tier's delay: only first attempts measure the queue.
    if (retryCount === 0 && Number.isFinite(publishedAt) && publishedAt > 0) {
      metrics.observe(
        'taskQueueWait',
        {type: task.type},
        Math.max(0, Date.now() - publishedAt) / 1000,
      );
    }
  }

  private recordDuration(
    task: TaskMessage,
    outcome: 'succeeded' | 'retry' | 'failed' | 'timeout',
    durationMs: number,
  ): void {
    this.options.metrics?.observe(
      'taskDuration',
      {type: task.type, outcome},
      durationMs / 1000,
    );
  }

  private recordFailure(
    task: TaskMessage,
    error: Error,
    willRetry: boolean,
    durationMs: number,
  ): void {
    const reason = failureReason(error);
    const outcome =
      reason === 'timeout' ? 'timeout' : willRetry ? 'retry' : 'failed';
    this.recordDuration(task, outcome, durationMs);
    if (willRetry)
      this.options.metrics?.count('taskRetries', {type: task.type});
    else this.options.metrics?.count('taskFailures', {type: task.type, reason});
  }

  /**
   * Moves a message to the queue whose consumers run its type: published
   * unchanged (headers, retry count, ids) and confirmed before the ack, so
   * it is never lost; a crash between the two leaves a copy in both queues,
   * which the run ledger turns into one run.
   */
  private async handOver(
    channel: ConfirmChannel,
    delivery: Delivery,
    queue: string,
  ): Promise<void> {
    const {message} = delivery;
    await publishConfirmed(channel, '', queue, message.content, {
      ...message.properties,
      headers: withoutDeliveryCount(message.properties.headers),
    });
    delivery.ack();
    this.options.logger.debug('Task handed over to its own queue', {
      queue,
      execution_key: message.properties.headers?.['x-execution-key'],
    });
  }

  /** Parks a run whose deliveries keep killing their consumer, instead of running it again. */
  private async parkIfCrashLooping(
    channel: ConfirmChannel,
    delivery: Delivery,
    task: TaskMessage,
    retryCount: number,
  ): Promise<boolean> {
    const headers = delivery.message.properties.headers ?? {};
    const executionId = executionIdOf(headers);
    const check = this.options.isCrashLooping;
    if (
      !check ||
      !(await check(
        executionId,
        retryCount,
        resentOf(headers),
        task.scheduler_id,
      ))
    ) {
      return false;
    }
    await this.park(channel, delivery, task, CRASH_LOOP_REASON, retryCount);
    this.options.metrics?.count('taskFailures', {
      type: task.type,
      reason: 'crash_loop',
    });
    // Parked and acked: the outcome is retried like any other, never requeued.
    await this.markOutcome(
      () =>
        this.options.ledger.finished(
          executionId,
          'failed',
          this.clock(),
          0,
          CRASH_LOOP_REASON,
          retryCount,
        ),
      this.options.logger,
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
    delivery: Delivery,
    task: TaskMessage | undefined,
    reason: string,
    retryCount: number,
  ): Promise<void> {
    const {message} = delivery;
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
      this.options.metrics?.count('taskFailures', {
        type: 'unknown',
        reason: 'poison',
      });
      this.options.logger.error('Poison message parked in the failed queue', {
        failed_reason: reason,
      });
    }
    delivery.ack();
  }
}
