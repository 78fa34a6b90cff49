import path from 'node:path';
import runner from 'node-pg-migrate';
import {Client} from 'pg';
import type {Logger} from '../logging/logger';
import {ensureDatabase} from './database-admin';
import {
  dropStrandedKnownTimeZones,
  refreshKnownTimeZones,
} from './known-time-zones';

/** Plain SQL files, applied in the order of their timestamp prefix. */
export const MIGRATIONS_DIR = path.resolve(__dirname, '../../migrations');
export const MIGRATIONS_TABLE = 'pgmigrations';
/** Advisory lock id (per database) serialising concurrent migrate runs. */
const MIGRATION_LOCK_ID = 7_130_913_001;

export interface MigrationResult {
  databaseCreated: boolean;
  applied: string[];
}

/**
 * Creates the database if it is missing and applies pending migrations.
 * node-pg-migrate's own lock fails at once when another run holds it, so a
 * second container starting at the same moment would crash; we wait on a
 * session advisory lock instead and let the runner skip its own. Applied
 * migrations are recorded, so a second run changes nothing.
 */
export async function migrateDatabase(
  databaseUrl: string,
  logger: Logger,
): Promise<MigrationResult> {
  const databaseCreated = await ensureDatabase(databaseUrl);
  if (databaseCreated) logger.info('Database created');
  const client = new Client({connectionString: databaseUrl});
  client.on('error', error =>
    logger.error('Migration connection failed', {error: error.message}),
  );
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    if (await dropStrandedKnownTimeZones(client, MIGRATIONS_TABLE)) {
      logger.info(
        'Time zone names left by a restore dropped; their migration runs again',
      );
    }
    const applied = await runner({
      dbClient: client,
      noLock: true,
      dir: MIGRATIONS_DIR,
      ignorePattern: '(?!.*\\.sql$).*',
      direction: 'up',
      migrationsTable: MIGRATIONS_TABLE,
      checkOrder: true,
      singleTransaction: true,
      logger: {
        debug: (msg: string) => logger.debug(msg),
        info: (msg: string) => logger.debug(msg),
        warn: (msg: string) => logger.warn(msg),
        error: (msg: string) => logger.error(msg),
      },
    });
    const names = applied.map(migration => migration.name);
    logger.info('Migrations applied', {count: names.length, migrations: names});
    const zones = await refreshKnownTimeZones(client);
    if (zones.added + zones.removed > 0) {
      logger.info('Time zone names brought up to date', zones);
    }
    return {databaseCreated, applied: names};
  } finally {
    // Ending the session releases the advisory lock as well.
    await client.end();
  }
}
