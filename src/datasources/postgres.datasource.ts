import {inject, lifeCycleObserver, LifeCycleObserver} from '@loopback/core';
import {juggler} from '@loopback/repository';
import {PoolMode, sessionOptions} from '../database/pg-pool';
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
      // An idle pooled session that dies (a database restart or failover,
      // pg_terminate_backend) is an 'error' event of the pool: without a
      // listener it was an uncaught exception and the API process exited.
      // pg-pool drops that client; the next request connects anew.
      onError: (error: Error) =>
        logger?.warn('Database connection lost; the pool reconnects', {
          context: 'postgres-datasource',
          error: error.message,
        }),
      // Connect on first use: the API starts even while PostgreSQL is still
      // coming up, and the pool reconnects after an outage.
      lazyConnect: true,
    });
  }

  override async stop(): Promise<void> {
    await this.disconnect();
  }
}
