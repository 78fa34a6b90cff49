import {
  BindingScope,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import type {Pool} from 'pg';
import {AppConfig, reportChildEnv} from '../config';
import {createPool, statementTimeout} from '../database/pg-pool';
import {ReminderExecutor} from '../executors/reminder.executor';
import {ReportExecutor} from '../executors/report.executor';
import type {TaskExecutor} from '../executors/task-executor';
import {WorkerExecutor} from '../executors/worker.executor';
import {AppBindings, ConsumerBindings, LoggingBindings} from '../keys';
import {componentLogger, Logger} from '../logging/logger';
import {AmqpConnection} from '../queue/amqp-connection';
import type {TaskType} from '../queue/task-message';
import {
  assertTopology,
  brokerTopology,
  REPORT_QUEUE,
  retrySettings,
  TASK_QUEUE,
} from '../queue/topology';
import {FailedTaskConsumer} from './failed-task-consumer';
import {isCrashLooping} from './crash-loop-guard';
import {createLedgerPool, RunLedger} from './run-ledger';
import {HandOff, TaskConsumer} from './task-consumer';

export const CONSUMER_CONTEXT = 'cron-worker';
/** After SIGTERM, how long a worker or report child gets before SIGKILL. */
export const KILL_GRACE_MS = 5000;

/**
 * Runs the consumer role: asserts the topology, consumes tasks one at a time
 * and the failed queue beside them. Stopping lets the running task finish
 * within CRON_SHUTDOWN_GRACE_MS, then closes channels, connection and pool.
 */
@lifeCycleObserver('roles', {scope: BindingScope.SINGLETON})
export class ConsumerObserver implements LifeCycleObserver {
  private readonly logger: Logger;
  private pool?: Pool;
  private ledgerPool?: Pool;
  private connection?: AmqpConnection;
  private tasks?: TaskConsumer;
  private reports: TaskConsumer[] = [];
  private failed?: FailedTaskConsumer;
  private stopping?: Promise<void>;

  constructor(
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(LoggingBindings.LOGGER) logger: Logger,
    @inject(ConsumerBindings.EXECUTORS, {optional: true})
    private readonly executorOverrides: Partial<
      Record<TaskType, TaskExecutor>
    > = {},
  ) {
    this.logger = componentLogger(logger, CONSUMER_CONTEXT);
  }

  async start(): Promise<void> {
    this.stopping = undefined;
    const {config} = this;
    const settings = retrySettings(config);
    this.pool = createPool(
      config.databaseUrl,
      this.logger,
      5,
      statementTimeout(config.dbStatementTimeoutMs),
    );
    const ledgerPool = createLedgerPool(
      config.databaseUrl,
      this.logger,
      config.cronLedgerDurableCommit,
      config.dbStatementTimeoutMs,
    );
    this.ledgerPool = ledgerPool;
    this.connection = new AmqpConnection(config.amqpUrl, this.logger, {
      onConnect: connection =>
        assertTopology(
          () => connection.createChannel(),
          brokerTopology(settings),
        ),
    });
    // The consumer's main pool commits durably: it flushes start marks.
    const ledger = new RunLedger(ledgerPool, this.pool);
    const consumerFor = (
      queue: string,
      executors: Record<TaskType, TaskExecutor>,
      prefetch: number,
      handOff?: HandOff,
    ) =>
      new TaskConsumer({
        connection: this.connection!,
        queue,
        handOff,
        ledger,
        isCrashLooping: (id, retryCount) =>
          isCrashLooping(ledgerPool, id, retryCount),
        executors,
        retry: settings,
        prefetch,
        logger: this.logger,
      });
    this.tasks = consumerFor(
      TASK_QUEUE,
      this.executors(config.cronTaskTimeoutMs),
      config.cronWorkerPrefetch,
      {types: new Set(['report']), queue: REPORT_QUEUE},
    );
    // Reports run beside cron tasks, never in their slot: each report
    // consumer holds one report at a time (prefetch 1), so an idle one
    // never waits behind a busy one's prefetched messages.
    this.reports = Array.from({length: config.reports.concurrency}, () =>
      consumerFor(
        REPORT_QUEUE,
        this.executors(config.reports.taskTimeoutMs),
        1,
      ),
    );
    this.failed = new FailedTaskConsumer(
      this.connection,
      this.pool,
      this.logger,
    );
    await this.connection.start();
    await this.tasks.start();
    for (const reports of this.reports) await reports.start();
    await this.failed.start();
    this.logger.info('cron-worker started', {
      prefetch: config.cronWorkerPrefetch,
      report_concurrency: config.reports.concurrency,
      max_retries: config.cronMaxRetries,
    });
  }

  /** Why this process consumes nothing right now, or undefined while both queues are subscribed. */
  notConsuming(): string | undefined {
    if (!this.tasks?.consuming) return 'not subscribed to cron_scheduler';
    if (this.reports.some(reports => !reports.consuming))
      return 'not subscribed to cron_scheduler_reports';
    if (!this.failed?.consuming)
      return 'not subscribed to cron_scheduler_failed';
    return undefined;
  }

  /** The executors of one consumer; `timeoutMs` bounds runs whose worker sets none. */
  private executors(timeoutMs: number): Record<TaskType, TaskExecutor> {
    const {config} = this;
    const pool = this.pool!;
    const childOptions = {
      defaultTimeoutMs: timeoutMs,
      killGraceMs: KILL_GRACE_MS,
      env: config.childEnv,
      outputMaxBytes: config.taskOutputMaxBytes,
    };
    return {
      worker: new WorkerExecutor(pool, {
        ...childOptions,
        workersDir: config.workersDir,
      }),
      // Reports read the database and send mail: their child gets what that needs.
      report: new ReportExecutor(pool, {
        ...childOptions,
        env: reportChildEnv(config),
      }),
      reminder: new ReminderExecutor(pool),
      ...this.executorOverrides,
    };
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    const grace = this.config.cronShutdownGraceMs;
    await Promise.all([
      this.tasks?.stop(grace),
      ...this.reports.map(reports => reports.stop(grace)),
    ]);
    await this.failed?.stop();
    await this.connection?.stop();
    await this.pool?.end();
    await this.ledgerPool?.end();
    this.logger.info('cron-worker stopped');
  }
}
