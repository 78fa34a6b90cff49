import {inject, lifeCycleObserver, LifeCycleObserver} from '@loopback/core';
import {juggler} from '@loopback/repository';

export const POSTGRES_DATASOURCE_CONFIG = 'datasources.config.postgres';

export interface PostgresDataSourceConfig {
  url: string;
  /** Largest number of pooled connections this process opens. */
  max?: number;
  /** statement_timeout of every session: a request never holds one longer. */
  statementTimeoutMs: number;
  /** Settings the database's own rules read (fixed names from our code, never request input). */
  sessionSettings?: Record<string, string>;
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
  ) {
    super({
      name: 'postgres',
      connector: 'postgresql',
      url: dsConfig.url,
      max: dsConfig.max ?? 10,
      // Sent in the startup packet, so every (re)connected session has it.
      options: Object.entries({
        statement_timeout: String(Math.round(dsConfig.statementTimeoutMs)),
        ...dsConfig.sessionSettings,
      })
        .map(([name, value]) => `-c ${name}=${value}`)
        .join(' '),
      // Connect on first use: the API starts even while PostgreSQL is still
      // coming up, and the pool reconnects after an outage.
      lazyConnect: true,
    });
  }

  override async stop(): Promise<void> {
    await this.disconnect();
  }
}
