import type {Pool} from 'pg';
import type {TaskPublisher} from '../queue/task-publisher';
import {publishClaims} from './claim-publisher';
import type {Claim} from './execution-claimer';

const SWEEP_BATCH = 1000;

/**
 * Republishes claims whose publish was never confirmed (the producer died
 * between claim and confirm, or the broker was down). Rows are locked with
 * FOR UPDATE SKIP LOCKED, so several producers sweep without doubling up.
 * Claims of schedulers that have since become stay-alive are left alone.
 * Only runs still `claimed` count: once a consumer has moved a run on, its
 * message evidently reached the broker, which keeps it until acknowledged;
 * `published_at` may still be missing when the producer died or lost its
 * database after the confirm. Republishing those ran a failed run's attempts
 * all over again, or a running one twice at once.
 * Returns how many were republished.
 */
export async function sweepUnpublished(
  pool: Pool,
  publisher: TaskPublisher,
  now: Date,
  olderThanMs: number,
): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const {rows} = await client.query<Claim>(
      `SELECT e.id AS execution_id, e.scheduler_id, e.execution_key,
              s.report_id, s.worker_id, s.reminder_id, s.params,
              s.date_time IS NOT NULL AS one_time
         FROM scheduler_execution e
         JOIN scheduler s ON s.id = e.scheduler_id
        -- Only runs still claimed; a stay-alive worker runs under the supervisor.
        WHERE e.published_at IS NULL AND e.status = 'claimed'
          AND e.executed_at < $1
          AND NOT s.stay_alive
        ORDER BY e.executed_at
        LIMIT ${SWEEP_BATCH}
          FOR UPDATE OF e SKIP LOCKED`,
      [new Date(now.getTime() - olderThanMs)],
    );
    const claims = rows.map(row => ({
      ...row,
      execution_id: Number(row.execution_id),
    }));
    const published = await publishClaims(client, publisher, claims, now);
    await client.query('COMMIT');
    return published;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
