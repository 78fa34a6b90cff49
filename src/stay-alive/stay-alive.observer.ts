import {
  BindingScope,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import type {Pool} from 'pg';
import type {AppConfig} from '../config';
import {createPool, statementTimeout} from '../database/pg-pool';
import {AppBindings, LoggingBindings, MetricsBindings} from '../keys';
import type {Metrics} from '../metrics/metrics';
import {componentLogger, Logger} from '../logging/logger';
import {StayAliveSupervisor} from './supervisor';
import {databaseTarget} from '../config';

export const STAY_ALIVE_CONTEXT = 'stay-alive';

/** Runs the stay-alive supervisor (APP_MODE=stay-alive) until stopped. */
// One instance, so health checks see the one that runs.
@lifeCycleObserver('roles', {scope: BindingScope.SINGLETON})
export class StayAliveObserver implements LifeCycleObserver {
  private readonly logger: Logger;
  private pool?: Pool;
  private stopping?: Promise<void>;
  /** The running supervisor, for tests and health checks. */
  supervisor?: StayAliveSupervisor;

  constructor(
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(LoggingBindings.LOGGER) logger: Logger,
    @inject(MetricsBindings.METRICS, {optional: true})
    private readonly metrics?: Metrics,
  ) {
    this.logger = componentLogger(logger, STAY_ALIVE_CONTEXT);
  }

  start(): void {
    this.stopping = undefined;
    this.pool = createPool(
      databaseTarget(this.config),
      this.logger,
      2,
      statementTimeout(this.config.dbStatementTimeoutMs),
    );
    this.supervisor = new StayAliveSupervisor({
      pool: this.pool,
      // Session advisory locks: never through a transaction pooler.
      databaseUrl: this.config.databaseDirectUrl,
      settings: this.config.stayAlive,
      workersDir: this.config.workersDir,
      env: this.config.childEnv,
      logger: this.logger,
      name: this.config.containerId,
      metrics: this.metrics,
    });
    this.supervisor.start();
    this.logger.info('stay-alive supervisor started', {
      reconcile_ms: this.config.stayAlive.reconcileMs,
    });
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    await this.supervisor?.stop();
    await this.pool?.end();
    this.logger.info('stay-alive supervisor stopped');
  }
}
