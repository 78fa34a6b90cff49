import {Pool} from 'pg';
import type {Logger} from '../logging/logger';

/** DB_STATEMENT_TIMEOUT_MS's default: the background roles' statement limit. */
export const DEFAULT_BACKGROUND_STATEMENT_TIMEOUT_MS = 60_000;

/** The session setting that bounds every statement of a pool's sessions. */
export function statementTimeout(ms: number): {statement_timeout: string} {
  return {statement_timeout: String(Math.round(ms))};
}

/**
 * A pg pool for the background roles, which need plain SQL and transactions
 * (batched claims, FOR UPDATE SKIP LOCKED). Idle-client errors (a database
 * restart) are logged, not thrown: the pool reconnects on the next query.
 * `sessionSettings` are fixed names from our code (never request input).
 */
export function createPool(
  databaseUrl: string,
  logger: Logger,
  max = 5,
  sessionSettings: Record<string, string> = {},
): Pool {
  // No query may hang a role: a pool without its own limit gets the default.
  sessionSettings = {
    ...statementTimeout(DEFAULT_BACKGROUND_STATEMENT_TIMEOUT_MS),
    ...sessionSettings,
  };
  // Settings travel in the startup packet, so every (re)connected session has them.
  const options = Object.entries(sessionSettings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
  const pool = new Pool({
    connectionString: databaseUrl,
    max,
    ...(options ? {options} : {}),
  });
  pool.on('error', error =>
    logger.warn('Database connection lost', {error: error.message}),
  );
  return pool;
}
