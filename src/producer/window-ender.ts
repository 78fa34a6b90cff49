import type {Pool} from 'pg';

/**
 * Switches off active schedulers whose `ends_at` lies before `evaluatedUpTo`
 * (the newest slot every producer is done with), as a one-time scheduler is
 * after its run: status false, a reason the API shows, and an audit event
 * (actor: the service) written by the same statement, so neither is without
 * the other. A scheduler already off is left alone: one event per ending.
 */
export async function endActiveWindows(
  pool: Pool,
  evaluatedUpTo: Date,
): Promise<Array<{id: number; ends_at: Date}>> {
  const {rows} = await pool.query<{id: number; ends_at: Date}>(
    `WITH ended AS (
       UPDATE scheduler
          SET status = false,
              status_reason = 'active window ended at ' ||
                to_char(ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
        WHERE status AND NOT stay_alive
          AND ends_at IS NOT NULL AND ends_at < $1
        RETURNING id, ends_at, status_reason
     ), audited AS (
       INSERT INTO audit_event (actor_user_id, action, entity, entity_id, reason, changes)
       SELECT NULL, 'deactivate', 'scheduler', id::text, status_reason,
              jsonb_build_object('status', jsonb_build_array(true, false))
         FROM ended
     )
     SELECT id, ends_at FROM ended ORDER BY id`,
    [evaluatedUpTo],
  );
  return rows;
}
