import {ensureInitialAdmin} from './auth/initial-admin';
import {loadConfig, requireDirectSession} from './config';
import {migrateDatabase} from './database/migration-runner';
import {createLogger} from './logging/logger';
import {startupErrorLine} from './process/startup-error';

/**
 * `npm run migrate`: create the database if missing, apply pending migrations,
 * and make sure an admin exists (from ADMIN_EMAIL / ADMIN_PASSWORD).
 */
async function migrate(): Promise<void> {
  const config = loadConfig();
  requireDirectSession(config, 'migrate');
  const logger = createLogger({
    level: config.logLevel,
    service: config.serviceName,
  }).child({context: 'migrate'});
  // A session advisory lock serialises migrations: a direct connection.
  await migrateDatabase(config.databaseDirectUrl, logger);
  await ensureInitialAdmin(
    config.databaseDirectUrl,
    config.initialAdmin,
    logger,
  );
}

migrate().catch(error => {
  process.stderr.write(startupErrorLine(error));
  process.exit(1);
});
