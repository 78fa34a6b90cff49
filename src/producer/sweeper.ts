import {performance} from 'node:perf_hooks';
import type {Pool} from 'pg';
import type {TaskPublisher} from '../queue/task-publisher';
import {ConfirmedListener, publishClaims} from './claim-publisher';
import type {Claim} from './execution-claimer';

export interface SweepOptions {
  /** A claim unconfirmed this long (by the database's clock) is republished. */
  olderThanMs: number;
  /** Claims for slots before this one are skipped, never sent late. */
  staleBefore: Date;
  /** Stop starting batches once this much time has been spent. */
  budgetMs: number;
  /** Claims per batch (and per transaction). */
  batchSize?: number;
  /** Monotonic milliseconds; injectable so tests can spend the budget. */
  elapsedClock?: () => number;
  /** Told what the broker confirmed (the dispatch-lag metric). */
  onConfirmed?: ConfirmedListener;
}

export interface SweepResult {
  republished: number;
  /** Claims older than the catch-up window, marked skipped instead. */
  skipped: number;
}

const DEFAULT_BATCH = 1000;

/**
 * Republishes claims whose publish was never confirmed (the producer died
 * between claim and confirm, or the broker was down), batch after batch
 * until none is left or the time budget is spent. Claims whose slot lies
 * before the catch-up window are marked `skipped` instead (cron runs only:
 * what an operator started is sent however late): after a long
 * broker outage a scheduler fires at most the window's runs, not one per
 * minute of the outage. Rows are locked with FOR UPDATE SKIP LOCKED, so
 * several producers sweep without doubling up. The age cut-off is read from
 * the database's clock, as `executed_at` was written, so host clock skew
 * cannot make a claim look stale.
 * Only runs still `claimed` count: once a consumer has moved a run on, its
 * message evidently reached the broker, which keeps it until acknowledged;
 * `published_at` may still be missing when the producer died or lost its
 * database after the confirm. Claims of schedulers that have since become
 * stay-alive are left alone (the supervisor runs those). A run that carries
 * its own message (an operator's re-drive or queued report: the outbox) is
 * sent as stored, so edited params are not replaced by the scheduler's.
 */
export async function sweepUnpublished(
  pool: Pool,
  publisher: TaskPublisher,
  options: SweepOptions,
): Promise<SweepResult> {
  const elapsed = options.elapsedClock ?? (() => performance.now());
  const batchSize = options.batchSize ?? DEFAULT_BATCH;
  const started = elapsed();
  const withinBudget = () => elapsed() - started < options.budgetMs;
  const result: SweepResult = {republished: 0, skipped: 0};
  for (;;) {
    const skipped = await skipStale(pool, options, batchSize);
    result.skipped += skipped;
    if (skipped < batchSize || !withinBudget()) break;
  }
  while (withinBudget() || result.republished === 0) {
    const batch = await republishBatch(pool, publisher, options, batchSize);
    result.republished += batch.published;
    // Stop when nothing is left, or when the broker took none (it is down).
    if (batch.found < batchSize || batch.published === 0) break;
  }
  return result;
}

/**
 * Only claims unconfirmed for the sweep age (by the database's clock) are
 * skipped: a younger one may be in the hands of a producer publishing it
 * right now, and marking it "not sent" then would be a lie.
 */
async function skipStale(
  pool: Pool,
  options: SweepOptions,
  batchSize: number,
): Promise<number> {
  const {rowCount} = await pool.query(
    `UPDATE scheduler_execution
        SET status = 'skipped',
            status_reason = 'not sent: its minute is older than the catch-up window'
      WHERE id IN (
        SELECT id FROM scheduler_execution
         WHERE status = 'claimed' AND published_at IS NULL AND slot < $1
           AND executed_at < now() - make_interval(secs => $2::float8 / 1000)
           -- Operators' runs (re-drives, run now, queued reports, backfills) are never stale.
           AND execution_key LIKE 'cron-%' AND trigger = 'schedule'
         LIMIT ${batchSize}
           FOR UPDATE SKIP LOCKED)`,
    [options.staleBefore, options.olderThanMs],
  );
  return rowCount ?? 0;
}

async function republishBatch(
  pool: Pool,
  publisher: TaskPublisher,
  options: SweepOptions,
  batchSize: number,
): Promise<{found: number; published: number}> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const {rows} = await client.query<Claim>(
      `SELECT e.id AS execution_id, e.scheduler_id, e.execution_key, e.slot, e.payload,
              s.report_id, s.worker_id, s.reminder_id, s.http_target_id, s.params,
              s.date_time IS NOT NULL AS one_time
         FROM scheduler_execution e
         JOIN scheduler s ON s.id = e.scheduler_id
        WHERE e.published_at IS NULL AND e.status = 'claimed'
          AND e.executed_at < now() - make_interval(secs => $1::float8 / 1000)
          AND NOT s.stay_alive
        ORDER BY e.executed_at
        LIMIT ${batchSize}
          FOR UPDATE OF e SKIP LOCKED
          -- Its scheduler too, without waiting: a one-time scheduler is
          -- switched off in this transaction, and a delete holding the
          -- scheduler while it waits for the run would deadlock with it.
          FOR NO KEY UPDATE OF s SKIP LOCKED`,
      [options.olderThanMs],
    );
    const claims = rows.map(row => ({
      ...row,
      execution_id: Number(row.execution_id),
    }));
    const published = await publishClaims(
      client,
      publisher,
      claims,
      options.onConfirmed,
    );
    await client.query('COMMIT');
    return {found: claims.length, published};
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
