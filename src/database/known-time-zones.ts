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
