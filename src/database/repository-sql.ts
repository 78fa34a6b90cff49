import type {juggler} from '@loopback/repository';
import type {SqlExecutor} from '../audit/audit-event';

interface SqlRepository {
  dataSource: juggler.DataSource;
  execute(sql: string, params: unknown[]): Promise<unknown>;
}

/**
 * Plain SQL through a repository's datasource, in its pool and statement
 * timeout. The datasource connects lazily on its first model call; a raw
 * `execute` before that would wait for ever, so it connects first.
 */
export function repositorySql(repository: SqlRepository): SqlExecutor {
  return async (sql, params) => {
    if (!repository.dataSource.connected) await repository.dataSource.connect();
    return repository.execute(sql, params);
  };
}
