import {
  BindingScope,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import {HttpErrors} from '@loopback/rest';
import type {AppConfig} from '../config';
import {AppBindings, LoggingBindings} from '../keys';
import {componentLogger, Logger} from '../logging/logger';
import {outsideRequest} from '../logging/request-context';
import {AmqpConnection} from './amqp-connection';
import {checkQueues, QueueStats} from './queue-stats';
import {TaskPublisher} from './task-publisher';
import {assertTopology, brokerTopology, retrySettings} from './topology';

/**
 * The API's way to the broker (re-drives). It connects on first use, so the
 * API starts and serves while RabbitMQ is down; a publish then answers 503.
 * A singleton: in the default transient scope every request got its own
 * instance, opened its own connection, and the one the lifecycle stopped
 * was never the one in use, so connections leaked and kept reconnecting.
 */
@lifeCycleObserver('roles', {scope: BindingScope.SINGLETON})
export class BrokerService implements LifeCycleObserver {
  private readonly logger: Logger;
  private connection?: AmqpConnection;
  private publisher?: TaskPublisher;
  /** The connection's first attempt, while it lasts and after. */
  private starting?: Promise<void>;

  constructor(
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(LoggingBindings.LOGGER) logger: Logger,
  ) {
    this.logger = componentLogger(logger, 'broker');
  }

  async taskPublisher(): Promise<TaskPublisher> {
    if (!this.connection) {
      const topology = brokerTopology(retrySettings(this.config));
      const connection = new AmqpConnection(this.config.amqpUrl, this.logger, {
        onConnect: opened =>
          assertTopology(() => opened.createChannel(), topology),
        connectTimeoutMs: this.config.amqpConnectTimeoutMs,
      });
      this.connection = connection;
      // One channel: a backfill's runs reach the queue in slot order.
      this.publisher = new TaskPublisher(connection, this.logger, undefined, {
        confirmTimeoutMs: this.config.amqpConfirmTimeoutMs,
      });
      // The first request to publish opens the connection, which outlives
      // it: its socket, reconnects and their records belong to no request.
      // Requests that come while it opens wait for the same first attempt
      // (they were told 503 before, the broker being merely slow to answer).
      this.starting = outsideRequest(() => connection.start());
      await this.starting;
    } else {
      // Its error, if any, went to the request that opened it.
      await this.starting?.catch(() => undefined);
    }
    if (!this.connection?.connected) {
      throw new HttpErrors.ServiceUnavailable(
        'The message broker is unavailable',
      );
    }
    return this.publisher!;
  }

  /**
   * Ready messages and consumers of each queue, read with passive declares
   * (a missing queue closes only its own channel and is reported absent).
   */
  async queueStats(names: string[]): Promise<QueueStats[]> {
    await this.taskPublisher();
    return checkQueues(this.connection!, names);
  }

  async stop(): Promise<void> {
    await this.publisher?.close();
    await this.connection?.stop();
    this.publisher = undefined;
    this.connection = undefined;
    this.starting = undefined;
  }
}
