import {ensureInitialAdmin} from './auth/initial-admin';
import {loadConfig} from './config';
import {migrateDatabase} from './database/migration-runner';
import {createLogger} from './logging/logger';
import {startupErrorLine} from './startup-error';

/**
 * `npm run migrate`: create the database if missing, apply pending migrations,
 * and make sure an admin exists (from ADMIN_EMAIL / ADMIN_PASSWORD).
 */
async function migrate(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({
    level: config.logLevel,
    service: config.serviceName,
  }).child({context: 'migrate'});
  await migrateDatabase(config.databaseUrl, logger);
  await ensureInitialAdmin(config.databaseUrl, config.initialAdmin, logger);
}

migrate().catch(error => {
  process.stderr.write(startupErrorLine(error));
  process.exit(1);
});
