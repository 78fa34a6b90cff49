import type {Pool} from 'pg';

/** What to do with a delivery: run it, or acknowledge it as a duplicate. */
export type StartDecision =
  'run' | 'succeeded' | 'failed' | 'attempt-already-ran';

/**
 * The consumer's side of the `scheduler_execution` row: published ->
 * running -> succeeded | retrying | failed, with attempts, times and the
 * last error. Runs without an execution id (re-drives of unknown runs) are
 * simply not recorded.
 */
export class RunLedger {
  constructor(private readonly pool: Pool) {}

  /**
   * Marks the run as running unless this delivery is a duplicate: one round
   * trip. A duplicate is a message for a run that already ended (succeeded,
   * or failed after its last retry: re-drives get a run of their own), or
   * one whose attempt already ran while the run waits for its retry (the
   * retry copy carries a higher retry count). A run that is `running` is
   * started again: its consumer may have died (the broker redelivers).
   */
  async start(
    executionId: number | undefined,
    at: Date,
    retryCount = 0,
  ): Promise<StartDecision> {
    if (executionId === undefined) return 'run';
    const {rows} = await this.pool.query<{
      previous: string | null;
      started: number;
    }>(
      `WITH previous AS (
         SELECT status FROM scheduler_execution WHERE id = $1
       ), started AS (
         UPDATE scheduler_execution
            SET status = 'running', attempts = attempts + 1, started_at = $2,
                finished_at = NULL, duration_ms = NULL, last_retry_count = $3
          WHERE id = $1
            AND status NOT IN ('succeeded', 'failed')
            AND NOT (status = 'retrying' AND last_retry_count >= $3)
         RETURNING 1
       )
       -- A data-modifying WITH runs to completion whether or not it is read.
       SELECT (SELECT status FROM previous) AS previous,
              (SELECT count(*) FROM started)::int AS started`,
      [executionId, at, retryCount],
    );
    const {previous, started} = rows[0] ?? {previous: null, started: 0};
    // No row (deleted by the 30-day cleanup, say): run it as before.
    if (started > 0 || previous === null) return 'run';
    if (previous === 'succeeded' || previous === 'failed') return previous;
    return 'attempt-already-ran';
  }

  async finished(
    executionId: number | undefined,
    status: 'succeeded' | 'retrying' | 'failed',
    at: Date,
    durationMs: number,
    error?: string,
  ): Promise<void> {
    await this.update(
      executionId,
      `status = $2, finished_at = $3, duration_ms = $4,
       last_error = COALESCE($5, last_error)`,
      [status, at, Math.round(durationMs), error ?? null],
    );
  }

  /** A shutdown interrupted the run: it waits for redelivery again. */
  async interrupted(executionId: number | undefined): Promise<void> {
    await this.update(executionId, `status = 'published'`, []);
  }

  private async update(
    executionId: number | undefined,
    assignments: string,
    values: unknown[],
  ): Promise<void> {
    if (executionId === undefined) return;
    await this.pool.query(
      `UPDATE scheduler_execution SET ${assignments} WHERE id = $1`,
      [executionId, ...values],
    );
  }
}
