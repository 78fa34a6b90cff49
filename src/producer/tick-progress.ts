import type {Pool} from 'pg';

/**
 * The newest slot any producer instance evaluated, shared in
 * `producer_state`: a producer that starts after downtime tells the minutes
 * nobody evaluated (skipped, or caught up) from a merely late tick.
 */
export async function readSharedLastSlot(
  pool: Pool,
): Promise<Date | undefined> {
  const {rows} = await pool.query<{last_slot: Date | null}>(
    `SELECT last_slot FROM producer_state WHERE name = 'ticks'`,
  );
  return rows[0]?.last_slot ?? undefined;
}

/** Moves the shared last slot forward, never back (peers write it too). */
export async function saveSharedLastSlot(
  pool: Pool,
  slot: Date,
): Promise<void> {
  await pool.query(
    `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', $1)
     ON CONFLICT (name) DO UPDATE
       SET last_slot = GREATEST(producer_state.last_slot, EXCLUDED.last_slot),
           updated_at = now()`,
    [slot],
  );
}
