import {Client} from 'pg';
import type {AppConfig} from '../config';
import type {Logger} from '../logging/logger';
import {hashPassword} from './password-hasher';

/**
 * When no active admin exists, makes ADMIN_EMAIL an admin with ADMIN_PASSWORD
 * (creating the user, or promoting and resetting an existing one: the way
 * back in after a lock-out). Does nothing while any active admin exists.
 */
export async function ensureInitialAdmin(
  databaseUrl: string,
  admin: AppConfig['initialAdmin'],
  logger: Logger,
): Promise<'created' | 'exists' | 'missing'> {
  const client = new Client({connectionString: databaseUrl});
  await client.connect();
  try {
    const found = await client.query(
      `SELECT 1 FROM app_user WHERE role = 'admin' AND active LIMIT 1`,
    );
    if (found.rowCount) return 'exists';
    if (!admin) {
      logger.warn(
        'No active admin user: set ADMIN_EMAIL and ADMIN_PASSWORD and run npm run migrate',
      );
      return 'missing';
    }
    const {rows} = await client.query(
      `INSERT INTO app_user (email, name, password_hash, role, active)
       VALUES ($1, 'Administrator', $2, 'admin', true)
       ON CONFLICT (email) DO UPDATE
         SET role = 'admin', active = true, password_hash = EXCLUDED.password_hash
       RETURNING id`,
      [admin.email, await hashPassword(admin.password)],
    );
    logger.info('Initial admin ready', {user_id: rows[0].id});
    return 'created';
  } finally {
    await client.end();
  }
}
