import type {Pool, PoolClient} from 'pg';
import {taskMessageFor} from '../queue/task-message';
import type {TaskPublisher} from '../queue/task-publisher';
import type {Claim} from './execution-claimer';

/**
 * Publishes claimed runs and records only what the broker confirmed: the
 * execution is marked published, and a one-time scheduler is disabled.
 * Unconfirmed claims stay unpublished for the sweeper.
 */
export async function publishClaims(
  db: Pool | PoolClient,
  publisher: TaskPublisher,
  claims: Claim[],
  publishedAt: Date,
): Promise<number> {
  if (claims.length === 0) return 0;
  const confirmed = await publisher.publish(
    claims.map(claim => ({
      executionId: claim.execution_id,
      executionKey: claim.execution_key,
      message: taskMessageFor(claim),
    })),
  );
  if (confirmed.size === 0) return 0;
  const ids = [...confirmed];
  // The consumer may already have moved a fast run past "published".
  await db.query(
    `UPDATE scheduler_execution
        SET published_at = COALESCE(published_at, $2),
            status = CASE WHEN status = 'claimed' THEN 'published' ELSE status END
      WHERE id = ANY($1::bigint[])`,
    [ids, publishedAt],
  );
  const oneTime = claims
    .filter(claim => claim.one_time && confirmed.has(claim.execution_id))
    .map(claim => claim.scheduler_id);
  if (oneTime.length > 0) {
    await db.query(
      `UPDATE scheduler SET status = false
        WHERE id = ANY($1::int[]) AND date_time IS NOT NULL`,
      [oneTime],
    );
  }
  return confirmed.size;
}
