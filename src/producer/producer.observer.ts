import {
  BindingScope,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import type {Pool} from 'pg';
import type {AppConfig} from '../config';
import {
  AppBindings,
  LoggingBindings,
  MetricsBindings,
  ProducerBindings,
} from '../keys';
import {cached, Metrics} from '../metrics/metrics';
import {readSchedulerStates, SCRAPE_CACHE_MS} from '../metrics/scrape-readers';
import {componentLogger, Logger} from '../logging/logger';
import {AmqpConnection} from '../queue/amqp-connection';
import {TaskPublisher} from '../queue/task-publisher';
import {assertTopology, brokerTopology, retrySettings} from '../queue/topology';
import {CleanupTimer} from './cleanup-timer';
import {lostRunAfterMs, stuckRunAfterMs} from './lost-run-sweep';
import {LOST_RUN_SWEEP_INTERVAL_MS, LostRunTimer} from './lost-run-timer';
import {busyWorkQueues} from '../queue/queue-stats';
import {addMinutes, minuteSlot} from '../scheduling/slots';
import {killAfterClaimFaultPoint} from './fault-point';
import {MinuteTicker} from './minute-ticker';
import {Producer, readDatabaseClock} from './producer';
import {scaledClock} from './scaled-clock';
import {claimBatchSize} from './execution-claimer';
import {createProducerPool} from './producer-pool';

export const PRODUCER_CONTEXT = 'cron-scheduler';
/** How often each producer asks whether the daily cleanup is due. */
const CLEANUP_CHECK_INTERVAL_MS = 5 * 60 * 1000;

/**
 * Runs the producer role: asserts the broker topology (a mismatch fails the
 * start), then ticks every minute until stopped. Stopping lets the tick in
 * flight finish its publishes, then closes channel, connection and pool.
 */
// One instance, so health checks see the one that runs.
@lifeCycleObserver('roles', {scope: BindingScope.SINGLETON})
export class ProducerObserver implements LifeCycleObserver {
  private readonly logger: Logger;
  private pool?: Pool;
  private connection?: AmqpConnection;
  private publisher?: TaskPublisher;
  private ticker?: MinuteTicker;
  private cleanup?: CleanupTimer;
  private lostRuns?: LostRunTimer;
  private stopping?: Promise<void>;
  private readonly clock: () => Date;
  private readonly clockRate: number;
  /** Real time: the database's clock can be asked whether a slot began. */
  private readonly realTime: boolean;

  constructor(
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(LoggingBindings.LOGGER) logger: Logger,
    @inject(ProducerBindings.CLOCK, {optional: true})
    clock?: () => Date,
    @inject(ProducerBindings.CLOCK_RATE, {optional: true})
    clockRate?: number,
    @inject(MetricsBindings.METRICS, {optional: true})
    private readonly metrics?: Metrics,
  ) {
    this.logger = componentLogger(logger, PRODUCER_CONTEXT);
    // A bound clock wins; else the test-only fast clock (never in production,
    // config refuses it there); else real time.
    const testClock = config.testClock;
    this.clock =
      clock ?? (testClock ? scaledClock(testClock) : () => new Date());
    this.clockRate = clockRate ?? (clock ? 1 : (testClock?.scale ?? 1));
    this.realTime = !clock && !testClock;
  }

  /** The running producer, for tests and health checks. */
  producer?: Producer;

  /** When the last successful tick finished, for the readiness check. */
  lastTickFinishedAt(): Date | undefined {
    return this.ticker?.lastSuccessAt;
  }

  /** Whether the producer holds a broker connection (it cannot publish without). */
  brokerConnected(): boolean {
    return this.connection?.connected ?? false;
  }

  /** The clock ticks are read from; readiness compares against the same one. */
  now(): Date {
    return this.clock();
  }

  async start(): Promise<void> {
    this.stopping = undefined;
    const topology = brokerTopology(retrySettings(this.config));
    this.pool = createProducerPool(this.config, this.logger);
    this.connection = new AmqpConnection(this.config.amqpUrl, this.logger, {
      onConnect: connection =>
        assertTopology(() => connection.createChannel(), topology),
      connectTimeoutMs: this.config.amqpConnectTimeoutMs,
    });
    await this.connection.start();
    this.publisher = new TaskPublisher(
      this.connection,
      this.logger,
      this.metrics,
      {
        channels: this.config.amqpPublishChannels,
        confirmTimeoutMs: this.config.amqpConfirmTimeoutMs,
      },
    );
    const pool = this.pool;
    const states = cached(SCRAPE_CACHE_MS, () => readSchedulerStates(pool));
    this.metrics?.onScrape(
      'schedulers',
      async gauge => {
        for (const [state, count] of Object.entries(await states())) {
          gauge.set({state}, count);
        }
      },
      error =>
        this.logger.warn('Metrics: scheduler counts unreadable', {
          error: error.message,
        }),
    );
    this.producer = new Producer(
      this.pool,
      this.publisher,
      {
        ...this.config,
        clockRate: this.clockRate,
        claimBatchSize: claimBatchSize(this.config.databasePoolMode),
        databaseClock: this.realTime
          ? () => readDatabaseClock(this.pool!)
          : undefined,
      },
      this.logger,
      this.config.testKillAfterClaimFile
        ? killAfterClaimFaultPoint(this.config.testKillAfterClaimFile)
        : undefined,
      this.metrics,
    );
    this.ticker = new MinuteTicker(
      this.clock,
      now => this.producer!.tick(now),
      this.logger,
      this.clockRate,
      tickAt => this.producer!.prepare(tickAt),
      () => this.producer!.warm(),
    );
    this.ticker.start();
    this.cleanup = new CleanupTimer(
      this.pool,
      this.clock,
      {
        timeZone: this.config.cronTimeZone,
        budgetMs: this.config.cronCleanupBudgetMs,
        intervalMs: CLEANUP_CHECK_INTERVAL_MS,
      },
      this.logger,
    );
    this.cleanup.start();
    this.lostRuns = this.lostRunTimer(this.connection, this.publisher);
    this.lostRuns.start();
    this.logger.info('cron-scheduler started', {
      container_id: this.config.containerId,
      time_zone: this.config.cronTimeZone,
      catch_up_minutes: this.config.cronCatchUpMinutes,
    });
    if (this.config.testClock ?? this.config.testKillAfterClaimFile) {
      this.logger.warn('Test-only producer settings active (chaos suite)', {
        clock_scale: this.config.testClock?.scale,
        clock_origin: this.config.testClock?.origin.toISOString(),
        kill_after_claim_file: this.config.testKillAfterClaimFile,
      });
    }
  }

  /**
   * The lost-run sweep: looks every minute, or more often when the grace is
   * short (the chaos suite), so a lost run waits about its grace, no more.
   */
  private lostRunTimer(
    connection: AmqpConnection,
    publisher: TaskPublisher,
  ): LostRunTimer {
    const graceMs = this.config.cronLostRunGraceMs;
    const lostAfterMs = lostRunAfterMs(retrySettings(this.config), graceMs);
    return new LostRunTimer(
      this.pool!,
      publisher,
      {
        lostAfterMs,
        stuckAfterMs: stuckRunAfterMs(lostAfterMs),
        intervalMs: Math.min(
          LOST_RUN_SWEEP_INTERVAL_MS,
          Math.max(1000, graceMs / 4),
        ),
        busyQueues: () => busyWorkQueues(connection),
        // The catch-up window by the producer's clock, as its ticks see it.
        staleBefore: () =>
          addMinutes(minuteSlot(this.clock()), -this.config.cronCatchUpMinutes),
      },
      this.logger,
      this.metrics,
    );
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    // First, so a tick waiting for a peer's slot lease ends now.
    this.producer?.stop();
    await this.ticker?.stop();
    await this.cleanup?.stop();
    await this.lostRuns?.stop();
    await this.publisher?.close();
    await this.connection?.stop();
    await this.pool?.end();
    this.logger.info('cron-scheduler stopped');
  }
}
