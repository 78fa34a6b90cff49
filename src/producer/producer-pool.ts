import type {Pool} from 'pg';
import {databaseTarget, type AppConfig} from '../config';
import {createPool, statementTimeout} from '../database/pg-pool';
import type {Logger} from '../logging/logger';

/**
 * The producer's pool. Its statements are short and planned over large
 * arrays (a minute's claims, the published marks), whose cost estimates
 * cross `jit_above_cost` while they run in tens of milliseconds: compiling
 * them would cost more than it saves, so its sessions run with `jit = off`
 * (a startup option; none travels behind a transaction pooler, see
 * CLAIM_BATCH_UNDER_POOLER in execution-claimer.ts).
 */
export function createProducerPool(
  config: Pick<
    AppConfig,
    'databaseUrl' | 'databasePoolMode' | 'dbStatementTimeoutMs'
  >,
  logger: Logger,
): Pool {
  return createPool(databaseTarget(config), logger, 5, {
    ...statementTimeout(config.dbStatementTimeoutMs),
    jit: 'off',
  });
}
