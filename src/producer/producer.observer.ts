import {
  BindingScope,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import type {Pool} from 'pg';
import type {AppConfig} from '../config';
import {createPool} from '../database/pg-pool';
import {AppBindings, LoggingBindings, ProducerBindings} from '../keys';
import {componentLogger, Logger} from '../logging/logger';
import {AmqpConnection} from '../queue/amqp-connection';
import {TaskPublisher} from '../queue/task-publisher';
import {assertTopology, brokerTopology, retrySettings} from '../queue/topology';
import {MinuteTicker} from './minute-ticker';
import {Producer} from './producer';

export const PRODUCER_CONTEXT = 'cron-scheduler';

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
  private stopping?: Promise<void>;

  constructor(
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(LoggingBindings.LOGGER) logger: Logger,
    @inject(ProducerBindings.CLOCK, {optional: true})
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.logger = componentLogger(logger, PRODUCER_CONTEXT);
  }

  /** The running producer, for tests and health checks. */
  producer?: Producer;

  /** When the last successful tick finished, for the readiness check. */
  lastTickFinishedAt(): Date | undefined {
    return this.ticker?.lastSuccessAt;
  }

  /** The clock ticks are read from; readiness compares against the same one. */
  now(): Date {
    return this.clock();
  }

  async start(): Promise<void> {
    this.stopping = undefined;
    const topology = brokerTopology(retrySettings(this.config));
    this.pool = createPool(this.config.databaseUrl, this.logger);
    this.connection = new AmqpConnection(this.config.amqpUrl, this.logger, {
      onConnect: connection =>
        assertTopology(() => connection.createChannel(), topology),
    });
    await this.connection.start();
    this.publisher = new TaskPublisher(this.connection, this.logger);
    this.producer = new Producer(
      this.pool,
      this.publisher,
      this.config,
      this.logger,
    );
    this.ticker = new MinuteTicker(
      this.clock,
      now => this.producer!.tick(now),
      this.logger,
    );
    this.ticker.start();
    this.logger.info('cron-scheduler started', {
      container_id: this.config.containerId,
      time_zone: this.config.cronTimeZone,
      catch_up_minutes: this.config.cronCatchUpMinutes,
    });
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    await this.ticker?.stop();
    await this.publisher?.close();
    await this.connection?.stop();
    await this.pool?.end();
    this.logger.info('cron-scheduler stopped');
  }
}
