import type {Pool} from 'pg';

/**
 * Tells each scheduler's owner (and, with notify.group, its group's
 * members) once per outage how many runs were missed beyond the catch-up
 * window, with the first and last missed slot, never one notice per slot. Keyed by (scheduler, first missed slot): producers
 * that plan the same outage write it once. `notify.on_failure: false`
 * silences it as it does failure notices; `notify.email` also puts an
 * e-mail copy in the mail outbox, in the same statement.
 */
export async function noticeMissedRuns(
  pool: Pool,
  missed: Map<number, number>,
  firstSlot: Date,
  lastSlot: Date,
): Promise<number> {
  if (missed.size === 0) return 0;
  const {rows} = await pool.query<{told: number}>(
    `WITH noted AS (
       INSERT INTO missed_runs_notice (scheduler_id, first_slot, last_slot, missed)
       SELECT m.id, $3, $4, m.missed
         FROM unnest($1::int[], $2::int[]) AS m(id, missed)
         JOIN scheduler s ON s.id = m.id
       ON CONFLICT (scheduler_id, first_slot) DO NOTHING
       RETURNING scheduler_id, missed
     ),
     told AS (
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
       JOIN app_user u ON u.active
        AND (u.id = s.user_id
             OR (COALESCE((s.notify ->> 'group')::boolean, false)
                 AND s.group_id IS NOT NULL AND u.group_id = s.group_id))
      WHERE COALESCE((s.notify ->> 'on_failure')::boolean, true)
     RETURNING id, (payload ->> 'scheduler_id')::int AS scheduler_id
     ),
     mailed AS (
       INSERT INTO notice_mail_outbox (notification_id)
       SELECT t.id FROM told t JOIN scheduler s ON s.id = t.scheduler_id
        WHERE COALESCE((s.notify ->> 'email')::boolean, false)
     )
     SELECT count(*)::int AS told FROM told`,
    [[...missed.keys()], [...missed.values()], firstSlot, lastSlot],
  );
  return rows[0].told;
}
