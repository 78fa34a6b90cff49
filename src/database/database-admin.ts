import {Client, escapeIdentifier} from 'pg';
import {databaseNameOf, withDatabase} from './database-url';

const MAINTENANCE_DATABASE = 'postgres';
// A concurrent CREATE DATABASE fails with either code, depending on timing.
const DATABASE_EXISTS_CODES = new Set(['42P04', '23505']);

async function withMaintenanceClient<T>(
  databaseUrl: string,
  work: (client: Client) => Promise<T>,
): Promise<T> {
  const client = new Client({
    connectionString: withDatabase(databaseUrl, MAINTENANCE_DATABASE),
  });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Creates the database named in `databaseUrl` unless it exists. Returns true if created. */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const name = databaseNameOf(databaseUrl);
  return withMaintenanceClient(databaseUrl, async client => {
    const found = await client.query(
      'SELECT 1 FROM pg_database WHERE datname = $1',
      [name],
    );
    if (found.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE ${escapeIdentifier(name)}`);
      return true;
    } catch (err) {
      // Another process created it between our check and our CREATE.
      if (DATABASE_EXISTS_CODES.has((err as {code?: string}).code ?? '')) {
        return false;
      }
      throw err;
    }
  });
}

/** Drops the database named in `databaseUrl`, closing its open connections. */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const name = databaseNameOf(databaseUrl);
  await withMaintenanceClient(databaseUrl, client =>
    client.query(
      `DROP DATABASE IF EXISTS ${escapeIdentifier(name)} WITH (FORCE)`,
    ),
  );
}
