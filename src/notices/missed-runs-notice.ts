import type {Pool} from 'pg';

/**
 * Tells each scheduler's owner once per outage how many runs were missed
 * beyond the catch-up window, with the first and last missed slot, never
 * one notice per slot. Keyed by (scheduler, first missed slot): producers
 * that plan the same outage write it once. `notify.on_failure: false`
 * silences it as it does failure notices.
 */
export async function noticeMissedRuns(
  pool: Pool,
  missed: Map<number, number>,
  firstSlot: Date,
  lastSlot: Date,
): Promise<number> {
  if (missed.size === 0) return 0;
  const {rowCount} = await pool.query(
    `WITH noted AS (
       INSERT INTO missed_runs_notice (scheduler_id, first_slot, last_slot, missed)
       SELECT m.id, $3, $4, m.missed
         FROM unnest($1::int[], $2::int[]) AS m(id, missed)
         JOIN scheduler s ON s.id = m.id
       ON CONFLICT (scheduler_id, first_slot) DO NOTHING
       RETURNING scheduler_id, missed
     )
     INSERT INTO notification (user_id, title, body, payload)
     SELECT u.id,
            'Scheduler ' || s.id || ' missed ' || n.missed || ' run(s): ' || s.description,
            n.missed || ' run(s) of "' || s.description || '" between ' ||
              to_char($3 AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') || ' and ' ||
              to_char($4 AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') ||
              ' were not fired: the producer was down longer than the catch-up window.',
            jsonb_build_object('kind', 'missed_runs', 'scheduler_id', s.id,
                               'missed', n.missed, 'first_slot', $3::timestamptz,
                               'last_slot', $4::timestamptz)
       FROM noted n
       JOIN scheduler s ON s.id = n.scheduler_id
       JOIN app_user u ON u.id = s.user_id AND u.active
      WHERE COALESCE((s.notify ->> 'on_failure')::boolean, true)`,
    [[...missed.keys()], [...missed.values()], firstSlot, lastSlot],
  );
  return rowCount ?? 0;
}
