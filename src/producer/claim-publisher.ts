import type {Pool, PoolClient} from 'pg';
import {markPublished} from '../database/mark-published';
import {taskMessageFor} from '../queue/task-message';
import type {Confirmations, TaskPublisher} from '../queue/task-publisher';
import type {Claim} from './execution-claimer';

export type ConfirmedListener = (
  claims: Claim[],
  confirmed: Confirmations,
) => void;

/**
 * Publishes claimed runs and records only what the broker confirmed: the
 * execution is marked published at the moment its confirm arrived, and a
 * one-time scheduler is disabled. Unconfirmed claims stay for the sweeper.
 */
export async function publishClaims(
  db: Pool | PoolClient,
  publisher: TaskPublisher,
  claims: Claim[],
  /** Told what the broker confirmed, and when (the dispatch-lag metric). */
  onConfirmed?: ConfirmedListener,
): Promise<number> {
  if (claims.length === 0) return 0;
  const confirmed = await publisher.publish(
    claims.map(claim => ({
      executionId: claim.execution_id,
      executionKey: claim.execution_key,
      message: claim.payload ?? taskMessageFor(claim),
    })),
  );
  if (confirmed.size === 0) return 0;
  onConfirmed?.(claims, confirmed);
  // Sent is sent: a one-time scheduler is switched off whatever the marks
  // did (runs a failed mark statement left claimed are sent again by the
  // sweeper, which switches theirs off then); the first error is thrown.
  let failure: unknown;
  await markPublished(db, confirmed).catch(error => {
    failure = error;
  });
  await disableOneTime(
    db,
    claims.filter(claim => claim.one_time && confirmed.has(claim.execution_id)),
  ).catch(error => {
    failure ??= error;
  });
  if (failure !== undefined) throw failure;
  return confirmed.size;
}

/**
 * Switches off one-time schedulers whose run was sent, but only while they
 * still hold the date_time that was claimed: one the user re-armed for
 * another moment since stays active and fires then.
 */
async function disableOneTime(
  db: Pool | PoolClient,
  sent: Claim[],
): Promise<void> {
  if (sent.length === 0) return;
  await db.query(
    `UPDATE scheduler s
        SET status = false,
            status_reason = 'one-time run sent (' || sent.execution_key || ')'
       FROM unnest($1::int[], $2::timestamptz[], $3::text[])
              AS sent(scheduler_id, slot, execution_key)
      WHERE s.id = sent.scheduler_id
        AND s.date_time >= sent.slot
        AND s.date_time < sent.slot + interval '1 minute'`,
    [
      sent.map(claim => claim.scheduler_id),
      sent.map(claim => claim.slot),
      sent.map(claim => claim.execution_key),
    ],
  );
}
