import type {Pool} from 'pg';

/** What evaluation needs of an active, non-stay-alive scheduler: no params. */
export interface Candidate {
  id: number;
  schedule: string | null;
  date_time: Date | null;
  timezone: string | null;
  /** When it last became eligible: no recurring run for an earlier slot. */
  activated_at: Date;
  /** When its row was last changed (its transaction's start). */
  updated_at?: Date;
  /** Calendars it follows (a plain list; ids of deleted calendars are ignored). */
  calendar_ids?: number[];
  /** The active window: no run for a slot before starts_at or after ends_at. */
  starts_at?: Date | null;
  ends_at?: Date | null;
}

/**
 * Loaded on every tick, so a change of schedule or status applies at the
 * next evaluation. Served by the partial index on active schedulers.
 */
export async function loadCandidates(pool: Pool): Promise<Candidate[]> {
  const {rows} = await pool.query<Candidate>(
    `SELECT id, schedule, date_time, timezone, activated_at, updated_at,
            calendar_ids, starts_at, ends_at
       FROM scheduler
      WHERE status AND NOT stay_alive`,
  );
  return rows;
}
