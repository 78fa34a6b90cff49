import type {Pool, PoolClient} from 'pg';
import {markPublished} from '../database/mark-published';
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
  await markPublished(db, [...confirmed], publishedAt);
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
