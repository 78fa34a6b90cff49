import {
  BindingScope,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import type {Pool} from 'pg';
import {AppConfig, reportChildEnv} from '../config';
import {createPool, statementTimeout} from '../database/pg-pool';
import {HttpExecutor} from '../executors/http.executor';
import {ReminderExecutor} from '../executors/reminder.executor';
import {ReportExecutor} from '../executors/report.executor';
import type {TaskExecutor} from '../executors/task-executor';
import {WorkerExecutor} from '../executors/worker.executor';
import {
  AppBindings,
  ConsumerBindings,
  LoggingBindings,
  MetricsBindings,
} from '../keys';
import {cached, Metrics} from '../metrics/metrics';
import {
  readFailedTasksStored,
  SCRAPE_CACHE_MS,
} from '../metrics/scrape-readers';
import {watchQueueGauges} from '../metrics/queue-gauges';
import {componentLogger, Logger} from '../logging/logger';
import {AmqpConnection} from '../queue/amqp-connection';
import type {TaskType} from '../queue/task-message';
import {
  assertTopology,
  brokerTopology,
  HTTP_QUEUE,
  REPORT_QUEUE,
  retrySettings,
  TASK_QUEUE,
} from '../queue/topology';
import {FailureNotices} from '../notices/failure-notices';
import {NoticeMailSender} from '../notices/notice-mail-sender';
import {NoticeTimer} from '../notices/notice-timer';
import {ReportMailer} from '../reports/delivery/report-mailer';
import {FailedTaskConsumer} from './failed-task-consumer';
import {WebhookConsumer} from '../webhooks/webhook-consumer';
import {WebhookDispatcher} from '../webhooks/webhook-dispatcher';
import {lostAfterMs} from '../webhooks/webhook-sweep';
import {isCrashLooping} from './crash-loop-guard';
import {createLedgerPool, RunLedger} from './run-ledger';
import {HandOff, TaskConsumer} from './task-consumer';
import {databaseTarget} from '../config';

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
  private tasks: TaskConsumer[] = [];
  private reports: TaskConsumer[] = [];
  private httpCalls: TaskConsumer[] = [];
  private failed?: FailedTaskConsumer;
  private notices?: NoticeTimer;
  private webhooks?: WebhookConsumer;
  private webhookDispatcher?: WebhookDispatcher;
  private noticeMailer?: ReportMailer;
  /** One for every consumer of the process: their ready tasks share a statement. */
  private reminders?: ReminderExecutor;
  private stopping?: Promise<void>;

  constructor(
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(LoggingBindings.LOGGER) logger: Logger,
    @inject(ConsumerBindings.EXECUTORS, {optional: true})
    private readonly executorOverrides: Partial<
      Record<TaskType, TaskExecutor>
    > = {},
    @inject(MetricsBindings.METRICS, {optional: true})
    private readonly metrics?: Metrics,
  ) {
    this.logger = componentLogger(logger, CONSUMER_CONTEXT);
  }

  async start(): Promise<void> {
    this.stopping = undefined;
    const {config} = this;
    const settings = retrySettings(config);
    const channels = config.cronWorkerChannels;
    // Each task channel may hold a connection of each pool at once.
    this.pool = createPool(
      databaseTarget(config),
      this.logger,
      Math.max(5, channels + 3),
      statementTimeout(config.dbStatementTimeoutMs),
    );
    const ledgerPool = createLedgerPool(
      databaseTarget(config),
      this.logger,
      config.cronLedgerDurableCommit,
      config.dbStatementTimeoutMs,
      Math.max(2, channels + 1),
    );
    this.ledgerPool = ledgerPool;
    this.reminders = new ReminderExecutor(this.pool, config.databasePoolMode);
    this.connection = new AmqpConnection(config.amqpUrl, this.logger, {
      onConnect: connection =>
        assertTopology(
          () => connection.createChannel(),
          brokerTopology(settings),
        ),
      connectTimeoutMs: config.amqpConnectTimeoutMs,
    });
    // One 'connected' listener per subscription: many HTTP consumers are no leak.
    this.connection.setMaxListeners(
      10 + channels + config.reports.concurrency + config.httpTasks.concurrency,
    );
    // The consumer's main pool commits durably: it flushes start marks.
    const ledger = new RunLedger(
      ledgerPool,
      this.pool,
      config.databasePoolMode,
    );
    const consumerFor = (
      queue: string,
      executors: Record<TaskType, TaskExecutor>,
      prefetch: number,
      handOffs?: HandOff[],
    ) =>
      new TaskConsumer({
        connection: this.connection!,
        queue,
        handOffs,
        ledger,
        isCrashLooping: (id, retryCount, resent, schedulerId) =>
          isCrashLooping(ledgerPool, id, retryCount, resent, schedulerId),
        executors,
        retry: settings,
        prefetch,
        logger: this.logger,
        metrics: this.metrics,
      });
    // Several channels let one process overlap one task's database and
    // broker waits with another's; each still runs one task at a time.
    this.tasks = Array.from({length: channels}, () =>
      consumerFor(
        TASK_QUEUE,
        this.executors(config.cronTaskTimeoutMs),
        config.cronWorkerPrefetch,
        [
          {types: new Set(['report']), queue: REPORT_QUEUE},
          {types: new Set(['http']), queue: HTTP_QUEUE},
        ],
      ),
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
    // Likewise HTTP calls: a target that hangs until its timeout holds one
    // of these, never a cron or report slot, and the others keep calling.
    this.httpCalls = Array.from({length: config.httpTasks.concurrency}, () =>
      consumerFor(HTTP_QUEUE, this.executors(config.cronTaskTimeoutMs), 1),
    );
    this.failed = new FailedTaskConsumer(
      this.connection,
      this.pool,
      this.logger,
    );
    this.notices = new NoticeTimer(
      new FailureNotices(
        this.pool,
        config.failureNoticeIntervalMs,
        this.logger,
      ),
      this.logger,
      new NoticeMailSender(
        this.pool,
        (this.noticeMailer = new ReportMailer(config.reports, this.logger)),
        this.logger,
      ),
    );
    // Webhook deliveries: published from their outbox, sent beside tasks.
    this.webhooks = new WebhookConsumer({
      connection: this.connection,
      pool: this.pool,
      retry: settings,
      outboundAllow: config.httpTasks.outboundAllow,
      logger: this.logger,
    });
    this.webhookDispatcher = new WebhookDispatcher(
      this.pool,
      this.connection,
      this.logger,
      undefined,
      {lostAfterMs: lostAfterMs(settings)},
    );
    this.readAtScrape(this.connection, this.pool, settings);
    await this.connection.start();
    for (const tasks of this.tasks) await tasks.start();
    for (const reports of this.reports) await reports.start();
    for (const calls of this.httpCalls) await calls.start();
    await this.failed.start();
    this.notices.start();
    await this.webhooks.start();
    this.webhookDispatcher.start();
    this.logger.info('cron-worker started', {
      prefetch: config.cronWorkerPrefetch,
      channels,
      report_concurrency: config.reports.concurrency,
      http_concurrency: config.httpTasks.concurrency,
      max_retries: config.cronMaxRetries,
    });
  }

  /** Why this process consumes nothing right now, or undefined while every queue it takes is subscribed. */
  notConsuming(): string | undefined {
    if (this.tasks.length === 0 || this.tasks.some(tasks => !tasks.consuming))
      return 'not subscribed to cron_scheduler';
    if (this.reports.some(reports => !reports.consuming))
      return 'not subscribed to cron_scheduler_reports';
    if (this.httpCalls.some(calls => !calls.consuming))
      return 'not subscribed to cron_scheduler_http';
    if (!this.failed?.consuming)
      return 'not subscribed to cron_scheduler_failed';
    if (this.webhooks && !this.webhooks.consuming)
      return 'not subscribed to cron_scheduler_webhooks';
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
      reminder: this.reminders!,
      http: new HttpExecutor(pool, {
        outboundAllow: config.httpTasks.outboundAllow,
        timeZone: config.cronTimeZone,
      }),
      ...this.executorOverrides,
    };
  }

  /** Queue depths and stored failures, read when Prometheus scrapes. */
  private readAtScrape(
    connection: AmqpConnection,
    pool: Pool,
    settings: ReturnType<typeof retrySettings>,
  ): void {
    const {metrics} = this;
    if (!metrics) return;
    const names = brokerTopology(settings).queues.map(queue => queue.name);
    watchQueueGauges(metrics, connection, names, this.logger);
    const stored = cached(SCRAPE_CACHE_MS, () => readFailedTasksStored(pool));
    metrics.onScrape(
      'failedTasksStored',
      async gauge => gauge.set(await stored()),
      error =>
        this.logger.warn('Metrics: stored failed tasks unreadable', {
          error: error.message,
        }),
    );
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    const grace = this.config.cronShutdownGraceMs;
    await Promise.all([
      ...this.tasks.map(tasks => tasks.stop(grace)),
      ...this.reports.map(reports => reports.stop(grace)),
      ...this.httpCalls.map(calls => calls.stop(grace)),
    ]);
    await this.failed?.stop();
    await this.notices?.stop();
    await this.webhookDispatcher?.stop();
    await this.webhooks?.stop();
    this.noticeMailer?.close();
    await this.connection?.stop();
    await this.pool?.end();
    await this.ledgerPool?.end();
    this.logger.info('cron-worker stopped');
  }
}
