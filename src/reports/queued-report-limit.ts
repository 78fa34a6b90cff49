import {HttpErrors} from '@loopback/rest';
import type {PoolClient} from 'pg';

/** Seconds a caller over the limit is told to wait before asking again. */
export const QUEUED_REPORT_RETRY_AFTER_SECONDS = 60;

/**
 * Refuses a queued report (429 with Retry-After) when `userId` already has
 * `max` queued reports that have not reached an outcome, so one user cannot
 * fill the report queue for everybody. Runs inside the transaction that
 * queues the report: the per-user lock makes that user's requests take turns,
 * so two at once cannot both see room for one more.
 */
export async function assertQueuedReportRoom(
  db: Pick<PoolClient, 'query'>,
  userId: number,
  max: number,
): Promise<void> {
  await db.query(
    `SELECT pg_advisory_xact_lock(hashtext('queued-report-limit'), $1)`,
    [userId],
  );
  const {rows} = await db.query<{waiting: number}>(
    `SELECT count(*)::int AS waiting
       FROM scheduler s
       JOIN scheduler_execution e ON e.scheduler_id = s.id
      WHERE s.user_id = $1 AND s.report_id IS NOT NULL AND NOT s.status
        AND e.execution_key LIKE 'manual-%'
        AND e.status NOT IN ('succeeded', 'failed')`,
    [userId],
  );
  if (rows[0].waiting < max) return;
  throw Object.assign(
    new HttpErrors.TooManyRequests(
      `You already have ${rows[0].waiting} queued reports waiting (REPORT_MAX_QUEUED_PER_USER is ${max}); try again when one has finished`,
    ),
    {headers: {'Retry-After': String(QUEUED_REPORT_RETRY_AFTER_SECONDS)}},
  );
}
