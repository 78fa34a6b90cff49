import {Pool} from 'pg';
import type {Logger} from '../logging/logger';

/**
 * How the service reaches PostgreSQL. `session`: each pooled connection is a
 * server session of its own (direct, or PgBouncer in session mode).
 * `transaction`: a transaction pooler (PgBouncer in transaction mode) shares
 * server sessions between clients, so nothing may be set per session: it
 * refuses startup options, and a SET would leak to other clients.
 */
export type PoolMode = 'session' | 'transaction';
export const POOL_MODES: readonly PoolMode[] = ['session', 'transaction'];

export interface DatabaseTarget {
  url: string;
  poolMode: PoolMode;
}

/**
 * How long a pooled connection may stay idle: past the producer's minute
 * tick, and below the 4 minutes after which some load balancers drop an idle
 * connection without a word.
 */
export const IDLE_CONNECTION_MS = 2 * 60_000;

/** DB_STATEMENT_TIMEOUT_MS's default: the background roles' statement limit. */
export const DEFAULT_BACKGROUND_STATEMENT_TIMEOUT_MS = 60_000;

/** The session setting that bounds every statement of a pool's sessions. */
export function statementTimeout(ms: number): {statement_timeout: string} {
  return {statement_timeout: String(Math.round(ms))};
}

/**
 * The startup option carrying session settings, or nothing behind a
 * transaction pooler (where the pooler's own limits, such as PgBouncer's
 * query_timeout, take statement_timeout's place).
 */
export function sessionOptions(
  poolMode: PoolMode,
  settings: Record<string, string>,
): string | undefined {
  if (poolMode === 'transaction') return undefined;
  const options = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
  return options || undefined;
}

/**
 * A pg pool for the background roles, which need plain SQL and transactions
 * (batched claims, FOR UPDATE SKIP LOCKED). Idle-client errors (a database
 * restart) are logged, not thrown: the pool reconnects on the next query.
 * `sessionSettings` are fixed names from our code (never request input).
 * A bare URL means a direct (session) connection.
 */
export function createPool(
  database: string | DatabaseTarget,
  logger: Logger,
  max = 5,
  sessionSettings: Record<string, string> = {},
): Pool {
  const {url, poolMode} =
    typeof database === 'string'
      ? {url: database, poolMode: 'session' as const}
      : database;
  // No query may hang a role: a pool without its own limit gets the default.
  sessionSettings = {
    ...statementTimeout(DEFAULT_BACKGROUND_STATEMENT_TIMEOUT_MS),
    ...sessionSettings,
  };
  // Settings travel in the startup packet, so every (re)connected session has them.
  const options = sessionOptions(poolMode, sessionSettings);
  const pool = new Pool({
    connectionString: url,
    max,
    // pg's default (10 s) closed every connection between two minute ticks:
    // each tick then connected anew, on sessions with cold caches and no
    // prepared statements, just when a whole minute's runs were due.
    idleTimeoutMillis: IDLE_CONNECTION_MS,
    // TCP keepalives: a connection a middlebox dropped shows as an error, not a hang.
    keepAlive: true,
    ...(options ? {options} : {}),
  });
  logLostConnections(pool, logger);
  return pool;
}

/**
 * A pooled session the server ends (a restart, a failover,
 * pg_terminate_backend) is an 'error' event: of the pool for an idle
 * client, of the client itself for one checked out across a wait (a broker
 * confirm, an SMTP answer, a transaction). With nobody listening either is
 * an uncaught exception that ends the process. Logged here instead; the
 * client's next query fails, its work rolls back, and the pool drops it.
 */
export function logLostConnections(
  pool: Pool,
  logger?: Pick<Logger, 'warn'>,
): void {
  pool.on('error', error =>
    logger?.warn('Database connection lost', {error: error.message}),
  );
  pool.on('connect', client =>
    client.on('error', error =>
      logger?.warn('Database connection lost', {
        error: error.message,
        in_use: true,
      }),
    ),
  );
}
