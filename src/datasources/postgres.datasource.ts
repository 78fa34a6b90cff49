import {inject, lifeCycleObserver, LifeCycleObserver} from '@loopback/core';
import {juggler} from '@loopback/repository';
import type {Pool} from 'pg';
import {
  logLostConnections,
  PoolMode,
  sessionOptions,
} from '../database/pg-pool';
import {LoggingBindings} from '../keys';
import type {Logger} from '../logging/logger';

export const POSTGRES_DATASOURCE_CONFIG = 'datasources.config.postgres';

export interface PostgresDataSourceConfig {
  url: string;
  /** Largest number of pooled connections this process opens. */
  max?: number;
  /** statement_timeout of every session: a request never holds one longer. */
  statementTimeoutMs: number;
  /** session (default) or transaction (behind PgBouncer's transaction pooling). */
  poolMode?: PoolMode;
  /**
   * Settings the database's own rules read (fixed names from our code, never
   * request input). Audited writes set them in their transaction, so they
   * hold through a transaction pooler too.
   */
  transactionSettings?: Record<string, string>;
}

/** The transaction settings a data source was configured with. */
export function transactionSettingsOf(dataSource: {
  settings: object;
}): Record<string, string> {
  return (
    (dataSource.settings as {transactionSettings?: Record<string, string>})
      .transactionSettings ?? {}
  );
}

@lifeCycleObserver('datasource')
export class PostgresDataSource
  extends juggler.DataSource
  implements LifeCycleObserver
{
  static dataSourceName = 'postgres';

  constructor(
    @inject(POSTGRES_DATASOURCE_CONFIG)
    dsConfig: PostgresDataSourceConfig,
    @inject(LoggingBindings.LOGGER, {optional: true})
    logger?: Logger,
  ) {
    super({
      name: 'postgres',
      connector: 'postgresql',
      url: dsConfig.url,
      max: dsConfig.max ?? 10,
      // Sent in the startup packet, so every (re)connected session has it.
      options: sessionOptions(dsConfig.poolMode ?? 'session', {
        statement_timeout: String(Math.round(dsConfig.statementTimeoutMs)),
      }),
      transactionSettings: dsConfig.transactionSettings ?? {},
      // Read by RecordReader: named statements only where sessions are ours.
      poolMode: dsConfig.poolMode ?? 'session',
      // Connect on first use: the API starts even while PostgreSQL is still
      // coming up, and the pool reconnects after an outage.
      lazyConnect: true,
    });
    // The connector's pool listened to nothing: PostgreSQL ending an idle
    // session (a restart, a failover) ended the API process.
    const pool = (this.connector as {pg?: Pool} | undefined)?.pg;
    if (pool) logLostConnections(pool, logger);
  }

  override async stop(): Promise<void> {
    await this.disconnect();
  }
}
