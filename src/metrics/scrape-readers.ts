import type {Pool} from 'pg';

/** Scrape-time reads are cached this long (see `cached`). */
export const SCRAPE_CACHE_MS = 5000;

/**
 * Schedulers by state, one statement: `active` (cron or one-time, on),
 * `inactive` (off, whatever kind), `stay_alive` (on, kept running).
 */
export async function readSchedulerStates(
  pool: Pool,
): Promise<Record<'active' | 'inactive' | 'stay_alive', number>> {
  const {rows} = await pool.query<{
    active: number;
    inactive: number;
    stay_alive: number;
  }>(
    `SELECT count(*) FILTER (WHERE status AND NOT stay_alive)::int AS active,
            count(*) FILTER (WHERE NOT status)::int AS inactive,
            count(*) FILTER (WHERE status AND stay_alive)::int AS stay_alive
       FROM scheduler`,
  );
  return rows[0];
}

/** Failed tasks in the failed-task store (as GET /system/status counts them). */
export async function readFailedTasksStored(pool: Pool): Promise<number> {
  const {rows} = await pool.query<{stored: number}>(
    `SELECT count(*)::int AS stored FROM failed_task`,
  );
  return rows[0].stored;
}
