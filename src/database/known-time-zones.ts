import type {Client} from 'pg';

/**
 * Brings `known_time_zone`, the names the scheduler's zone check reads
 * instead of scanning the zone database on every write, in line with
 * PostgreSQL's own list: after an upgrade of its zone data, a new name is
 * added and a withdrawn one removed (a withdrawn name is refused by the
 * check from then on; schedulers already holding it keep it, as before).
 */
export async function refreshKnownTimeZones(
  client: Client,
): Promise<{added: number; removed: number}> {
  const {rows} = await client.query<{added: number; removed: number}>(
    `WITH listed AS (
       SELECT DISTINCT lower(name) AS name FROM pg_timezone_names
     ), removed AS (
       DELETE FROM known_time_zone k
        WHERE NOT EXISTS (SELECT 1 FROM listed l WHERE l.name = k.name)
       RETURNING 1
     ), added AS (
       INSERT INTO known_time_zone (name) SELECT name FROM listed
       ON CONFLICT DO NOTHING
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM added)::int AS added,
            (SELECT count(*) FROM removed)::int AS removed`,
  );
  return rows[0];
}

/** The migration that creates `known_time_zone`, as pgmigrations names it. */
const ZONE_TABLE_MIGRATION = '1796100000000_known-time-zone-names';

/**
 * Drops a `known_time_zone` that the migrations table does not account for,
 * before migrating. A `pg_restore --clean` of a dump older than the table
 * (docs/operations.md, "Restoring the database") leaves it behind, since it
 * is not in the dump, while the restored migrations table no longer records
 * its migration, whose CREATE TABLE would then fail. That migration has
 * landed and cannot change; the table only copies pg_timezone_names, so it
 * loses nothing and the migration fills it again.
 */
export async function dropStrandedKnownTimeZones(
  client: Client,
  migrationsTable: string,
): Promise<boolean> {
  const {rows} = await client.query<{stranded: boolean}>(
    `SELECT to_regclass('known_time_zone') IS NOT NULL
        AND to_regclass($1) IS NOT NULL AS stranded`,
    [migrationsTable],
  );
  if (!rows[0].stranded) return false;
  const recorded = await client.query(
    `SELECT 1 FROM ${client.escapeIdentifier(migrationsTable)} WHERE name = $1`,
    [ZONE_TABLE_MIGRATION],
  );
  if (recorded.rowCount !== 0) return false;
  await client.query('DROP TABLE known_time_zone');
  return true;
}
