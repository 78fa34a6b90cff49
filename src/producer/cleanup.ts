import type {Pool} from 'pg';

export const RETENTION_DAYS = 30;
const CLEANUP_HOUR = 3;
const DELETE_BATCH = 10_000;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The local date (YYYY-MM-DD) and hour of `instant` in `timeZone`. */
function localDateAndHour(instant: Date, timeZone: string) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
    })
      .formatToParts(instant)
      .map(part => [part.type, part.value]),
  );
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    hour: Number(parts.hour),
  };
}

/**
 * Takes today's cleanup if it is 03:00 or later in `timeZone` and no
 * instance has run it today: one atomic upsert decides, so exactly one
 * producer wins per day. A producer that was down at 03:00 runs it later.
 */
export async function claimDailyCleanup(
  pool: Pool,
  now: Date,
  timeZone: string,
): Promise<boolean> {
  const {date, hour} = localDateAndHour(now, timeZone);
  if (hour < CLEANUP_HOUR) return false;
  const {rowCount} = await pool.query(
    `INSERT INTO producer_state (name, last_run_on) VALUES ('cleanup', $1)
     ON CONFLICT (name) DO UPDATE
       SET last_run_on = EXCLUDED.last_run_on, updated_at = now()
       WHERE producer_state.last_run_on IS NULL
          OR producer_state.last_run_on < EXCLUDED.last_run_on
     RETURNING name`,
    [date],
  );
  return rowCount === 1;
}

/** Deletes executions claimed more than 30 days before `now`, in batches. */
export async function deleteOldExecutions(
  pool: Pool,
  now: Date,
): Promise<number> {
  const cutoff = new Date(now.getTime() - RETENTION_DAYS * DAY_MS);
  let total = 0;
  for (;;) {
    const {rowCount} = await pool.query(
      `DELETE FROM scheduler_execution
        WHERE id IN (SELECT id FROM scheduler_execution
                      WHERE executed_at < $1 LIMIT ${DELETE_BATCH})`,
      [cutoff],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < DELETE_BATCH) return total;
  }
}
