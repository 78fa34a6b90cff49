import type {Pool, PoolClient} from 'pg';

/**
 * Disables an endpoint and tells its owner with a web notification, in one
 * statement: a webhook is never disabled silently, nor noticed twice (an
 * endpoint already disabled is left as it is).
 */
export async function disableWebhook(
  db: Pool | PoolClient,
  webhookId: number,
  reason: string,
): Promise<boolean> {
  const {rowCount} = await db.query(
    `WITH disabled AS (
       UPDATE webhook
          SET active = false, disabled_at = now(), disabled_reason = $2
        WHERE id = $1 AND active
       RETURNING id, user_id
     )
     INSERT INTO notification (user_id, title, body, payload)
     SELECT user_id, 'Webhook ' || id || ' disabled',
            'Webhook ' || id || ' receives no more events: ' || $2 ||
              '. Fix the endpoint, then set active to true again.',
            jsonb_build_object('kind', 'webhook_disabled', 'webhook_id', id, 'reason', $2::text)
       FROM disabled`,
    [webhookId, reason],
  );
  return (rowCount ?? 0) > 0;
}
