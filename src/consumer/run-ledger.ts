import type {Pool} from 'pg';
import {createPool} from '../database/pg-pool';
import type {Logger} from '../logging/logger';

/**
 * The ledger's own small pool. Unless `durableCommit`, its sessions commit
 * with `synchronous_commit = off`: a mark is visible to every session at once
 * (so a redelivered success is still skipped) but does not wait for the WAL
 * flush, which costs about 1.2 ms per commit on this class of disk and would
 * cap a prefetch-1 consumer near 400 tasks/s. Only a PostgreSQL server crash
 * can lose the last marks (at most 3 x wal_writer_delay, 600 ms by default);
 * messages are never lost, because acks live in the broker.
 */
export function createLedgerPool(
  databaseUrl: string,
  logger: Logger,
  durableCommit: boolean,
): Pool {
  return createPool(
    databaseUrl,
    logger,
    2,
    durableCommit ? {} : {synchronous_commit: 'off'},
  );
}

/**
 * The consumer's side of the `scheduler_execution` row: published ->
 * running -> succeeded | retrying | failed, with attempts, times and the
 * last error. Runs without an execution id (re-drives of unknown runs) are
 * simply not recorded.
 */
export class RunLedger {
  constructor(private readonly pool: Pool) {}

  /**
   * Marks the run as running, unless it already succeeded. Returns false for
   * a run that already succeeded (a redelivery to skip). The common case is
   * one round trip; only a run the update did not touch (succeeded, or an
   * unknown id) costs a second look.
   */
  async start(executionId: number | undefined, at: Date): Promise<boolean> {
    if (executionId === undefined) return true;
    const {rowCount} = await this.pool.query({
      // Named: parsed and planned once per connection, not once per task.
      name: 'ledger-start',
      text: `UPDATE scheduler_execution
                SET status = 'running', attempts = attempts + 1, started_at = $2,
                    finished_at = NULL, duration_ms = NULL
              WHERE id = $1 AND status <> 'succeeded'`,
      values: [executionId, at],
    });
    if (rowCount) return true;
    const {rows} = await this.pool.query<{status: string}>(
      `SELECT status FROM scheduler_execution WHERE id = $1`,
      [executionId],
    );
    return rows[0]?.status !== 'succeeded';
  }

  async finished(
    executionId: number | undefined,
    status: 'succeeded' | 'retrying' | 'failed',
    at: Date,
    durationMs: number,
    error?: string,
  ): Promise<void> {
    if (executionId === undefined) return;
    await this.pool.query({
      name: 'ledger-finished',
      text: `UPDATE scheduler_execution
                SET status = $2, finished_at = $3, duration_ms = $4,
                    last_error = COALESCE($5, last_error)
              WHERE id = $1`,
      values: [executionId, status, at, Math.round(durationMs), error ?? null],
    });
  }

  /** A shutdown interrupted the run: it waits for redelivery again. */
  async interrupted(executionId: number | undefined): Promise<void> {
    if (executionId === undefined) return;
    await this.pool.query(
      `UPDATE scheduler_execution SET status = 'published' WHERE id = $1`,
      [executionId],
    );
  }
}
