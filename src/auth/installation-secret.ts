import {randomBytes} from 'node:crypto';
import {Client} from 'pg';
import type {Logger} from '../logging/logger';

/**
 * The JWT signing secret of an installation without JWT_SECRET: generated
 * once (the first process to start wins the insert) and read from
 * PostgreSQL by every other process, so tokens work across them all.
 */
export async function loadInstallationJwtSecret(
  databaseUrl: string,
  logger: Logger,
): Promise<string> {
  const client = new Client({
    connectionString: databaseUrl,
    connectionTimeoutMillis: 5000,
  });
  await client.connect();
  try {
    const generated = randomBytes(32).toString('hex');
    const inserted = await client.query<{value: string}>(
      `INSERT INTO installation_secret (name, value) VALUES ('jwt', $1)
       ON CONFLICT (name) DO NOTHING RETURNING value`,
      [generated],
    );
    if (inserted.rowCount) {
      logger.warn(
        'Generated a random JWT signing secret and stored it in PostgreSQL (table installation_secret); set JWT_SECRET to choose your own',
      );
      return generated;
    }
    const {rows} = await client.query<{value: string}>(
      `SELECT value FROM installation_secret WHERE name = 'jwt'`,
    );
    logger.info(
      'JWT_SECRET is not set: using the generated signing secret stored in PostgreSQL',
    );
    return rows[0].value;
  } finally {
    await client.end();
  }
}
