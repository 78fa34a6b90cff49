/** Names we are willing to put into CREATE/DROP DATABASE (quoted as well). */
const DATABASE_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

export function databaseNameOf(databaseUrl: string): string {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  if (!DATABASE_NAME.test(name)) {
    throw new Error(
      `The database name in DATABASE_URL must match ${DATABASE_NAME} (got "${name}")`,
    );
  }
  return name;
}

/** The same server and credentials, pointed at another database. */
export function withDatabase(databaseUrl: string, database: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}
