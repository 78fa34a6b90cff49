import {
  BindingScope,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import type {Pool} from 'pg';
import type {AppConfig} from '../config';
import {createPool, statementTimeout} from '../database/pg-pool';
import {AppBindings, LoggingBindings, ReportBindings} from '../keys';
import {componentLogger, Logger} from '../logging/logger';
import {ReportMailer} from './delivery/report-mailer';
import type {ReportServices} from './report-runner';
import {databaseTarget} from '../config';

/**
 * The API's side of reports: a small pg pool for report queries and the
 * queued-run transaction, the mailer and the clock. Both are made on first
 * use and closed on stop.
 */
// One instance per application: a transient one would open a connection per
// request and never be the instance that stop() closes.
@lifeCycleObserver('roles', {scope: BindingScope.SINGLETON})
export class ReportGenerationService implements LifeCycleObserver {
  private readonly logger: Logger;
  private pool?: Pool;
  private mailer?: ReportMailer;

  constructor(
    @inject(AppBindings.CONFIG) readonly config: AppConfig,
    @inject(LoggingBindings.LOGGER) logger: Logger,
    @inject(ReportBindings.CLOCK, {optional: true})
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.logger = componentLogger(logger, 'reports');
  }

  now(): Date {
    return this.clock();
  }

  services(): ReportServices {
    this.pool ??= createPool(
      databaseTarget(this.config),
      this.logger,
      3,
      statementTimeout(this.config.dbStatementTimeoutMs),
    );
    this.mailer ??= new ReportMailer(this.config.reports, this.logger);
    return {
      db: this.pool,
      mailer: this.mailer,
      logger: this.logger,
      timeZone: this.config.cronTimeZone,
      catchUpMinutes: this.config.cronCatchUpMinutes,
      limits: this.config.reports,
    };
  }

  async stop(): Promise<void> {
    this.mailer?.close();
    const pool = this.pool;
    this.pool = undefined;
    this.mailer = undefined;
    await pool?.end();
  }
}
