import {Pool} from 'pg';
import type {Logger} from '../logging/logger';

/**
 * A pg pool for the background roles, which need plain SQL and transactions
 * (batched claims, FOR UPDATE SKIP LOCKED). Idle-client errors (a database
 * restart) are logged, not thrown: the pool reconnects on the next query.
 */
export function createPool(databaseUrl: string, logger: Logger, max = 5): Pool {
  const pool = new Pool({connectionString: databaseUrl, max});
  pool.on('error', error =>
    logger.warn('Database connection lost', {error: error.message}),
  );
  return pool;
}
