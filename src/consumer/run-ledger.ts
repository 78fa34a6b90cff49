import type {Pool} from 'pg';

/**
 * The consumer's side of the `scheduler_execution` row: published ->
 * running -> succeeded | retrying | failed, with attempts, times and the
 * last error. Runs without an execution id (re-drives of unknown runs) are
 * simply not recorded.
 */
export class RunLedger {
  constructor(private readonly pool: Pool) {}

  async alreadySucceeded(executionId: number | undefined): Promise<boolean> {
    if (executionId === undefined) return false;
    const {rows} = await this.pool.query<{status: string}>(
      'SELECT status FROM scheduler_execution WHERE id = $1',
      [executionId],
    );
    return rows[0]?.status === 'succeeded';
  }

  async started(executionId: number | undefined, at: Date): Promise<void> {
    await this.update(
      executionId,
      `status = 'running', attempts = attempts + 1, started_at = $2,
       finished_at = NULL, duration_ms = NULL`,
      [at],
    );
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
