import type {Pool} from 'pg';

/**
 * The consumer's side of the `scheduler_execution` row: published ->
 * running -> succeeded | retrying | failed, with attempts, times and the
 * last error. Runs without an execution id (re-drives of unknown runs) are
 * simply not recorded.
 */
export class RunLedger {
  constructor(private readonly pool: Pool) {}

  /**
   * Marks the run as running, unless it already succeeded: one round trip.
   * Returns false for a run that already succeeded (a redelivery to skip).
   */
  async start(executionId: number | undefined, at: Date): Promise<boolean> {
    if (executionId === undefined) return true;
    const {rows} = await this.pool.query<{previous: string | null}>(
      `WITH previous AS (
         SELECT status FROM scheduler_execution WHERE id = $1
       ), started AS (
         UPDATE scheduler_execution
            SET status = 'running', attempts = attempts + 1, started_at = $2,
                finished_at = NULL, duration_ms = NULL
          WHERE id = $1 AND status <> 'succeeded'
         RETURNING 1
       )
       -- A data-modifying WITH runs to completion whether or not it is read.
       SELECT (SELECT status FROM previous) AS previous`,
      [executionId, at],
    );
    return rows[0]?.previous !== 'succeeded';
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
