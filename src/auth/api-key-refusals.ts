import type {SqlExecutor} from '../audit/audit-event';
import {currentRequestId} from '../logging/request-context';

/** One audited refusal per key prefix per this long; the rest are counted. */
export const REFUSAL_AUDIT_WINDOW_MS = 60_000;
/**
 * Prefixes audited on their own per window: past this, refusals of new
 * prefixes share OVERFLOW_PREFIX, so keys that each start differently (a
 * flood anyone may send) cannot write an audit row per request either.
 */
export const MAX_AUDITED_PREFIXES = 100;
export const OVERFLOW_PREFIX = 'tsk_*';
/** Windows older than this are forgotten (their counts are no longer owed). */
const FORGET_AFTER = '1 hour';

/**
 * Records a refused API-key use. The first refusal of a prefix in a window
 * writes an audit event that carries how many refusals of the prefix's
 * previous window went unaudited (`unaudited_refusals`); the others in the
 * window only bump a counter.
 * One statement, so concurrent requests and replicas agree: the row lock
 * of the prefix's counter orders them. Time is the caller's clock.
 */
export async function recordRefusedApiKey(
  sql: SqlExecutor,
  keyPrefix: string,
  now: Date,
): Promise<void> {
  await sql(
    `WITH bucket AS (
       -- A prefix already counted in its window keeps its row; a new one
       -- gets its own only while fewer than $5 prefixes are counted: keys
       -- that each start differently share OVERFLOW_PREFIX instead.
       SELECT CASE
                WHEN EXISTS (SELECT 1 FROM api_key_refusal
                              WHERE key_prefix = $1
                                AND window_start > $2::timestamptz - $3::int * interval '1 millisecond')
                  OR (SELECT count(*) FROM api_key_refusal
                       WHERE window_start > $2::timestamptz - $3::int * interval '1 millisecond') < $5::int
                THEN $1::text ELSE $6::text END AS prefix
     ), counted AS (
       INSERT INTO api_key_refusal AS r (key_prefix, window_start)
       SELECT prefix, $2 FROM bucket
       ON CONFLICT (key_prefix) DO UPDATE SET
         previous_unaudited = CASE WHEN r.window_start <= $2 - $3 * interval '1 millisecond'
                                   THEN r.refused - 1 ELSE r.previous_unaudited END,
         refused = CASE WHEN r.window_start <= $2 - $3 * interval '1 millisecond'
                        THEN 1 ELSE r.refused + 1 END,
         window_start = CASE WHEN r.window_start <= $2 - $3 * interval '1 millisecond'
                             THEN $2 ELSE r.window_start END
       RETURNING key_prefix, refused, previous_unaudited
     ), audited AS (
       INSERT INTO audit_event (actor_user_id, action, entity, changes, request_id)
       SELECT NULL, 'refused', 'api-key',
              jsonb_build_object('key_prefix', jsonb_build_array(NULL, key_prefix))
                || CASE WHEN previous_unaudited > 0
                        THEN jsonb_build_object('unaudited_refusals',
                                                jsonb_build_array(NULL, previous_unaudited))
                        ELSE '{}'::jsonb END,
              $4
         FROM counted WHERE refused = 1
       RETURNING id
     )
     DELETE FROM api_key_refusal
      WHERE EXISTS (SELECT 1 FROM audited)
        AND key_prefix <> (SELECT prefix FROM bucket)
        AND window_start < $2 - interval '${FORGET_AFTER}'`,
    [
      keyPrefix,
      now,
      REFUSAL_AUDIT_WINDOW_MS,
      currentRequestId() ?? null,
      MAX_AUDITED_PREFIXES,
      OVERFLOW_PREFIX,
    ],
  );
}
