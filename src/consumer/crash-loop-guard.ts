import type {Pool} from 'pg';

/** Starts of one attempt without an outcome after which the run is parked. */
export const MAX_UNFINISHED_STARTS = 2;

export const CRASH_LOOP_REASON = `delivery started ${MAX_UNFINISHED_STARTS} times without an outcome (its consumer died each time); parked instead of being delivered again`;

/**
 * Called for redelivered messages only (a consumer or its connection died).
 * Tells whether a redelivered run must be parked because it crash-loops its
 * consumers: when the ledger shows its attempt as still `running` (a start
 * whose consumer died), that start is counted; after MAX_UNFINISHED_STARTS
 * such starts the run is not delivered again. Any other state resets the count.
 * A copy the lost-run sweep replaced (`resent` below the run's) says nothing
 * about the run: it leaves the count alone, and the start rule refuses it.
 */
export async function isCrashLooping(
  pool: Pool,
  executionId: number | undefined,
  retryCount: number,
  resent = 0,
  /** The delivery's scheduler: a run of another is left alone. */
  schedulerId?: number,
): Promise<boolean> {
  if (executionId === undefined) return false;
  const {rows} = await pool.query<{crash_looping: boolean}>(
    `UPDATE scheduler_execution
        SET unfinished_starts = CASE
              WHEN status = 'running' AND COALESCE(last_retry_count, 0) = $2
              THEN CASE WHEN unfinished_retry_count = $2
                        THEN unfinished_starts ELSE 0 END + 1
              ELSE 0 END,
            unfinished_retry_count = $2
      WHERE id = $1 AND resent <= $3 AND ($5::int IS NULL OR scheduler_id = $5)
      RETURNING unfinished_starts >= $4 AS crash_looping`,
    [
      executionId,
      retryCount,
      resent,
      MAX_UNFINISHED_STARTS,
      schedulerId ?? null,
    ],
  );
  return rows[0]?.crash_looping ?? false;
}
