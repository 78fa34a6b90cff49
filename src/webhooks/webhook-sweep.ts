import type {Pool} from 'pg';
import type {Logger} from '../logging/logger';
import {RetrySettings, retryTiers, webhookRetryTier} from '../queue/topology';
import {WEBHOOK_TIMEOUT_MS} from './webhook-events';

/**
 * Beyond the longest retry delay and one attempt, how long a published
 * delivery may go without an attempt before its message counts as lost:
 * generous, so a long queue backlog is not taken for a loss (a delivery
 * published again twice is still sent once per attempt: the consumer skips
 * a finished one, and receivers drop a repeated webhook-id).
 */
export const WEBHOOK_LOST_GRACE_MS = 60 * 60 * 1000;

/** How often the consumer role looks for lost deliveries. */
export const WEBHOOK_SWEEP_MS = 60 * 1000;

/** A delivery lost this many times more is failed, not published again. */
export const MAX_REPUBLISHES = 3;

/** How long a published, unfinished delivery may wait for an attempt. */
export function lostAfterMs(
  retry: RetrySettings,
  graceMs = WEBHOOK_LOST_GRACE_MS,
): number {
  const longestDelay = Math.max(
    0,
    ...retryTiers(retry, webhookRetryTier).map(tier => tier.delayMs),
  );
  return longestDelay + WEBHOOK_TIMEOUT_MS + graceMs;
}

interface SweptRow {
  id: string;
  webhook_id: number;
  event: string;
  status: string;
  republished: number;
}

export interface SweepResult {
  republished: number;
  failed: number;
}

/**
 * The webhook queue has no dead-letter route: a message the broker drops
 * (redelivered up to its delivery limit, purged, lost with a node) leaves
 * its delivery pending or retrying with no message behind it. Such a
 * delivery, published and unattempted for `lostAfter` ms at `now`, is put
 * back in the outbox (the dispatcher publishes it again), at most
 * MAX_REPUBLISHES times; then it is failed. Either way the delivery log
 * says so and a log line names it: nothing is lost silently.
 */
export async function sweepLostDeliveries(
  pool: Pool,
  logger: Logger,
  now: Date,
  lostAfter: number,
): Promise<SweepResult> {
  const cutoff = new Date(now.getTime() - lostAfter);
  const minutes = Math.round(lostAfter / 60_000);
  const {rows} = await pool.query<SweptRow>(
    `UPDATE webhook_delivery
        SET republished = republished + 1,
            published_at = CASE WHEN republished < $2::int THEN NULL ELSE published_at END,
            status = CASE WHEN republished < $2::int THEN status ELSE 'failed' END,
            finished_at = CASE WHEN republished < $2::int THEN NULL ELSE $3::timestamptz END,
            error = CASE WHEN republished < $2
              THEN 'no attempt for ' || $4 || ' min: the broker lost the message; published again ('
                   || (republished + 1) || ' of ' || $2 || ')'
              ELSE 'no attempt for ' || $4 || ' min: the broker lost the message '
                   || (republished + 1) || ' times; given up'
            END
      WHERE status IN ('pending', 'retrying')
        AND published_at IS NOT NULL
        AND published_at < $1::timestamptz
        AND (last_attempt_at IS NULL OR last_attempt_at < $1::timestamptz)
      RETURNING id, webhook_id, event, status, republished`,
    [cutoff, MAX_REPUBLISHES, now, String(minutes)],
  );
  const result: SweepResult = {republished: 0, failed: 0};
  for (const row of rows) {
    const fields = {
      webhook_id: row.webhook_id,
      delivery_id: Number(row.id),
      event: row.event,
      republished: row.republished,
    };
    if (row.status === 'failed') {
      result.failed++;
      logger.error(
        'Webhook delivery failed: its message was lost too often',
        fields,
      );
    } else {
      result.republished++;
      logger.warn(
        'Webhook delivery lost by the broker; published again',
        fields,
      );
    }
  }
  return result;
}
